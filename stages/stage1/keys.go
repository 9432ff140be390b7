package stage1

// This file owns the idempotency_keys table: every statement that touches
// it lives here.
//
// TODO(stage 1): write the table (createKeyTable(…), for New) and the
// claim (claim(…), for serve).
//
// The table is made through labdb.CreateTable (it writes the column types
// the way the engine you run on spells them), and it is an ordinary rowid
// table (the lab's event stream reads rows by rowid).
//
// When you are done, of any number of requests with one key, at the same
// instant or one after another, exactly one is claimed and executes, on
// SQLite as on PostgreSQL and whatever the isolation level; every other one
// gets 409 (problem.DuplicateRequest) and executes nothing. Why: a retry
// whose answer was lost must not pay again, and your handler cannot decide
// that alone, because two requests that both look see "no such key"
// (lesson 01, "The race", shows the designs that look right and pay twice,
// and "Why a check inside the transaction passes here, and where it
// stops" why this lab's one-writer SQLite hides some of them). A claim
// that cannot find out whether the key is free (any error other than the
// key being taken) gets 503 (problem.Unavailable) and executes nothing:
// fail closed ("Fail closed"). labdb.IsUniqueViolation tells the two
// apart; never the error's text.
//
// Store times with clock.Format (fixed-width RFC 3339 text, so that later
// stages can compare them as text) and take them from the lab clock.
