//! A thin Model Context Protocol server (work in progress: see issue "mcp-server").
