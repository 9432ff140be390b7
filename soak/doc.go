// Package soak holds the kit's long tests: solution 9, the final one,
// under kill -9 while 32 clients retry, under load where every request
// comes two to four times at once, and through a large day of every
// failure point, each time with a core ledger that outlives the server
// and is reconciled with the bank at the end. They run only when asked
// (make soak, or go test ./soak -soak), and each prints its figures;
// docs/reliability.md records them.
package soak
