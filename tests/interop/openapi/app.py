"""A small FastAPI application for tests/interop/openapi.sh: an inventory of items, with path,
query and body parameters, Pydantic models that FastAPI's OpenAPI 3.1 document `$ref`s (one inside
another), a 404 and a 422. It serves its own document at /openapi.json.

    python app.py PORT
"""

import sys
from typing import Optional

import uvicorn
from fastapi import FastAPI, HTTPException, Query
from pydantic import BaseModel, Field

app = FastAPI(title="Inventory", version="1.0.0")


class Dimensions(BaseModel):
    width: float
    height: float


class ItemIn(BaseModel):
    name: str = Field(description="What the item is called")
    price: float = Field(gt=0, description="Its price, in euros")
    tags: list[str] = []
    size: Optional[Dimensions] = None


class Item(ItemIn):
    id: int


ITEMS: dict[int, Item] = {1: Item(id=1, name="hammer", price=9.5, tags=["tools"])}


@app.get("/items", operation_id="list_items", summary="List the items", response_model=list[Item])
def list_items(tag: Optional[str] = None, limit: int = Query(10, ge=1, description="The most items to return")):
    found = [item for item in ITEMS.values() if tag is None or tag in item.tags]
    return found[:limit]


@app.get("/items/{item_id}", operation_id="get_item", summary="Get one item", response_model=Item)
def get_item(item_id: int):
    """Get one item by its id; 404 when there is none."""
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail=f"no item {item_id}")
    return ITEMS[item_id]


@app.post("/items", operation_id="create_item", summary="Add an item", status_code=201, response_model=Item)
def create_item(item: ItemIn, dry_run: bool = False):
    created = Item(id=max(ITEMS) + 1, **item.model_dump())
    if not dry_run:
        ITEMS[created.id] = created
    return created


# No operation_id: FastAPI makes one up (`delete_item_items__item_id__delete`).
@app.delete("/items/{item_id}", status_code=204)
def delete_item(item_id: int):
    if ITEMS.pop(item_id, None) is None:
        raise HTTPException(status_code=404, detail=f"no item {item_id}")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
