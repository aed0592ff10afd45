//! A user's program over the bindings generated from `contract.json`: `tests/integration/bindings_compile.rs`
//! builds it as `src/main.rs` of a small crate whose library is the generated `src/fixture.rs`,
//! under `cargo clippy -- -D warnings`, then runs it against the fixture server. It makes each call
//! through the typed handles and prints one JSON line per call: `{"call": ..., "result": ...}`.

use bindings_caller::fixture::*;
use serde_json::{Value, json};

fn print(call: &str, result: Value) {
    println!("{}", json!({ "call": call, "result": result }));
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: caller URL")?;
    let client = mcp_client::Client::builder("caller", "1.0").connect_http(&url).await?;

    let tools = Tools::new(&client);
    let weather = tools
        .get_weather(GetWeatherArgs {
            city: "Paris".into(),
            units: Some(get_weather::GetWeatherArgsUnits::Metric),
            at: Some(get_weather::Location { lat: 48.85, lon: 2.35 }),
            days: None,
        })
        .await?;
    print("get_weather", serde_json::to_value(&weather)?);

    let shape = shapes_area::ShapesAreaArgsShape::Rect { width: 2.0, height: 3.5 };
    let area = tools.shapes_area(ShapesAreaArgs { shape }).await?;
    print("shapes_area", json!(area.area));

    let labels = tools
        .set_labels(SetLabelsArgs {
            target: set_labels::Location::EuWest,
            labels: [("env".to_owned(), "prod".to_owned())].into(),
            value: Some(set_labels::SetLabelsArgsValue::Integer(7)),
            note: None,
        })
        .await?;
    print("set_labels", serde_json::to_value(&labels)?);

    let now = tools.now(NowArgs {}).await?;
    print("now", serde_json::to_value(&now)?);

    let read = tools
        .files_read_v2(FilesReadV2Args {
            path: "notes.txt".into(),
            encoding: Some(files_read_v2::FilesReadV2ArgsEncoding::Base64),
            range: Some(files_read_v2::FilesReadV2ArgsRange { start: 0, end: None }),
        })
        .await?;
    print("files_read_v2", serde_json::to_value(&read.content)?);

    match tools.files_read_v2(FilesReadV2Args { path: "missing".into(), encoding: None, range: None }).await {
        Err(error @ ToolError::Tool(_)) => print("files_read_v2 failing", json!(error.to_string())),
        other => return Err(format!("expected the tool to fail, got {other:?}").into()),
    }

    let keywords = tools.type_(TypeArgs { type_: "keyword".into(), self_: Some(true), match_: None }).await?;
    print("type", serde_json::to_value(&keywords.content)?);

    let prompts = Prompts::new(&client);
    let summary = prompts
        .summarize(SummarizePromptArgs { text: "A long text".into(), max_words: Some("5".into()), style: None })
        .await?;
    print("summarize", serde_json::to_value(&summary.messages)?);
    let greeting = prompts.greeting(GreetingPromptArgs::default()).await?;
    print("greeting", serde_json::to_value(&greeting.messages)?);

    print("user_profile_uri", json!(user_profile_uri("ada/lovelace?")));
    print("search_uri", json!(search_uri("rust & serde", "en")));
    let profile = Resources::new(&client).user_profile("ada lovelace").await?;
    print("user_profile", serde_json::to_value(&profile.contents)?);

    client.close().await;
    Ok(())
}
