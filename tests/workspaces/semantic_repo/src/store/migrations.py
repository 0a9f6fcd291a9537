import sqlite3

STEPS = [
    "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE)",
    "ALTER TABLE users ADD COLUMN created REAL",
]


def upgrade_schema(conn: sqlite3.Connection) -> int:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, statement in enumerate(STEPS[version:], start=version + 1):
        conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    return len(STEPS)


def vacuum_when_fragmented(conn, threshold=0.3):
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    total = conn.execute("PRAGMA page_count").fetchone()[0]
    if total and free / total > threshold:
        conn.execute("VACUUM")
