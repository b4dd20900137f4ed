"""The person's web console at /console: its files, its sign-in (a session cookie), and its live feed of changes.
The console is a client of /api/v1 only; nothing here holds a rule of an area."""
