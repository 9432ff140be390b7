package stage1

// This file owns the idempotency_keys table: every statement that touches
// it lives here.
//
// TODO(stage 1): write the table and the claim.
//
// createKeyTable(ctx, db) runs CREATE TABLE IF NOT EXISTS idempotency_keys
// through labdb.CreateTable (it writes the column types the way the engine
// you run on spells them). Make it an ordinary rowid table (an INTEGER PRIMARY KEY id is fine: the
// lab's event stream reads rows by rowid) with a key column that is UNIQUE
// and NOT NULL. That constraint is the whole design: the database, not
// your handler, decides which of two requests with one key executes.
//
// claim(ctx, tx, key, now) inserts the key inside the caller's transaction
// with a plain INSERT. The INSERT is the check. Do not look first and
// insert after: outside this transaction two simultaneous requests would
// both see "no such key", and inside it only this lab's one-writer SQLite
// saves you (the lesson says where that stops). Do not use INSERT OR
// IGNORE or an upsert either (they hide the very answer you need). Then
// tell the errors apart with labdb.IsUniqueViolation, never by the
// error's text:
//   - a unique violation means the key was already used: return
//     problem.New(problem.DuplicateRequest, …), a 409;
//   - any other error means the key store failed: return
//     problem.Wrap(problem.Unavailable, err, …), a 503. Fail closed: a
//     request that could not be claimed must never execute.
//
// Store times with clock.Format (fixed-width RFC 3339 text, so that later
// stages can compare them as text) and take them from the lab clock.
