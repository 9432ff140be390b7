package stage8

// This file owns the transfer_references table: every statement that
// touches it lives here.
//
// TODO(stage 8): when you are done, this file makes the stage's table of
// references (New makes it before the first request) and holds the
// reference of each transfer that carries one, and these hold:
//
//   - An invoice (one customer's reference) is paid at most once: by
//     clerks who pay it at once under keys of their own, from any of the
//     customer's accounts to any account, another payee's or one of the
//     customer's own, with another amount or memo, or years after the
//     first payment's key was purged. Another customer's invoice with
//     the same number is its own.
//   - A payment of an invoice already paid gets 409
//     problem.DuplicateReference whose Location names the transfer that
//     paid that invoice, and moves nothing. Any other failure fails the
//     request, and moves nothing.
//   - References that differ in any way (case, a space, a look-alike
//     letter, a dash, an accent, a separator, a leading 0) are
//     different invoices, stored and found as written, whatever
//     characters they hold (an apostrophe, a double quote). The kit
//     hands the reference over already in NFC.
//
// Why: a key knows only its own retries, and a clerk who pays an invoice
// again sends a new one; the reference names the thing in the world that
// must not be paid twice. Settle the questions of the lesson's "The
// constraint decides" (docs/lessons/08-zombie-resources.md) before you
// write: its last paragraph says what a failed statement does on
// PostgreSQL.
