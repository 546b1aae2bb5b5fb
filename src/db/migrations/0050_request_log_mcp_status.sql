-- A refused MCP tool call travels in a 200 answer (the protocol's tool error), so its row's status said "200" as a
-- success's does. mcp_status keeps the status the API gives the refusal's error code (403 for insufficient_scope,
-- 404 for not_found …): the log shows it and the status filter matches it. NULL for every other request.
ALTER TABLE request_log ADD COLUMN mcp_status smallint;
