"""Who may call /mcp: the credentials it accepts (the shared token, named static tokens, OAuth grants), the one
check of a presented token, each credential's grant, and the person's list of clients with their use."""
