//! A thin Model Context Protocol client (work in progress: see issue "mcp-client").
