package stage1

// This file owns the idempotency_keys table: every statement that touches
// it lives here.
//
// TODO(stage 1): write the table and the claim.
//
// createKeyTable(ctx, db) creates the idempotency_keys table through
// labdb.CreateTable (it writes the column types the way the engine you run
// on spells them). It is an ordinary rowid table (the lab's event stream
// reads rows by rowid). When you are done, the database itself refuses a
// second row with one key: that constraint is the whole design, because
// the database, not your handler, then decides which of two requests with
// one key executes.
//
// claim(ctx, tx, key, now) records the key inside the caller's
// transaction, and the write itself is the check. A look first leaves a
// window: outside this transaction two simultaneous requests both see "no
// such key", and inside it only this lab's one-writer SQLite saves you
// (the lesson says where that stops). A write that can never fail (an
// insert that ignores conflicts, an upsert) hides the very answer you
// need. Tell the outcomes apart with labdb.IsUniqueViolation, never by the
// error's text: a unique violation means the key was already used (409,
// problem.DuplicateRequest); any other error means the key store failed
// (503, problem.Unavailable). Fail closed: a request that could not be
// claimed must never execute.
//
// Store times with clock.Format (fixed-width RFC 3339 text, so that later
// stages can compare them as text) and take them from the lab clock.
