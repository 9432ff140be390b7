package grader

// The lesson of each stage, whose sections the checks name.
const (
	lesson0 = "docs/lessons/00-naive.md"
	lesson1 = "docs/lessons/01-claim.md"
	lesson2 = "docs/lessons/02-fingerprint.md"
	lesson3 = "docs/lessons/03-in-progress.md"
	lesson4 = "docs/lessons/04-replay.md"
	lesson5 = "docs/lessons/05-scope-retention.md"
	lesson6 = "docs/lessons/06-recovery.md"
	lesson7 = "docs/lessons/07-lost-updates.md"
	lesson8 = "docs/lessons/08-zombie-resources.md"
	lesson9 = "docs/lessons/09-delivery.md"
)

// catalogue is every check, stage by stage, in the order the lessons teach
// them: what a correct server does, why it matters for money, and the
// lesson section that explains it. The code that tests each claim is in
// checks_stageN.go (and checks_tally.go for stage 0's Tally).
var catalogue = []Check{
	// Stage 0: why retries hurt.
	{
		ID: "S0.happy-path", Stage: 0, Lesson: lesson0 + "#the-contract",
		Claim: "a valid transfer and a valid deposit answer 201 with Location and the money moves once",
		Why:   "a payment API that cannot move money correctly once has nothing to make safe yet",
		Run:   withScenario(1_000_000, checkHappyPath),
	},
	{
		ID: "S0.hostile-input", Stage: 0, Lesson: lesson0 + "#validation",
		Claim: "malformed, oversized, mistyped or unauthorised requests get their 4xx problem and change nothing",
		Why:   "a request the server cannot understand must never move money or leave a half-claimed key behind",
		Run:   withScenario(1_000_000, checkHostileInput),
	},
	{
		ID: "S0.owner-only-reads", Stage: 0, Lesson: lesson0 + "#the-contract",
		Claim: "accounts, entries and transfers are shown only to their owner: 401 without a token, 403 for someone else's, 404 for none",
		Why:   "a replay or a read that leaks another customer's transfer is a data breach",
		Run:   withScenario(1_000_000, checkOwnerOnlyReads),
	},
	{
		ID: "S0.tally-shipped", Stage: 0, Tally: true, Lesson: lesson0 + "#counting-the-damage",
		Claim: "Tally of the shipped day's access log equals its answer key",
		Why:   "before fixing double transfers you must be able to count them: every one is money a customer sent twice",
		Run:   checkTallyShipped,
	},
	{
		ID: "S0.tally-generated", Stage: 0, Tally: true, Lesson: lesson0 + "#counting-the-damage",
		Claim: "Tally of a freshly generated day's access log equals the truth in the server's books",
		Why:   "a tally that only matches one shipped answer key may have learned the key, not the log; a new day has new traps",
		Run:   checkTallyGenerated,
	},
	{
		ID: "S0.tally-traps", Stage: 0, Tally: true, Lesson: lesson0 + "#counting-the-damage",
		Claim: "Tally of a small log written by the check, in which one key is sent by two customers, two keys differ only in case, one customer reuses a key for two operations, an edited resubmission is retried, a resubmission changes only its memo, and a refusal is logged as a line of some 96 KiB, equals its known count; and a line that is not a record is an error",
		Why:   "a day drawn at random may hold none of these: a tally that groups by the key alone, by the key in lower case, by the op or by the account, that groups the transfers sent without a key under an empty one, that compares a double with the one before it rather than its group's first, or that compares only some members of the body, counts another number than the money sent twice; one that reads lines of at most 64 KiB (bufio.Scanner's default) stops at a refusal's long record; and one that skips a broken line reports less than the log holds, without a word",
		Run:   checkTallyTraps,
	},

	// Stage 1: a UNIQUE constraint decides.
	{
		ID: "S1.sequential-retry", Stage: 1, Lesson: lesson1 + "#a-retry-is-not-a-new-request",
		Claim: "a retry with the same key, sent after the original answered, does not execute again and is told that the original executed",
		Why:   "the client retried because it never saw the first answer; executing the retry sends the customer's money twice",
		Run:   withScenario(1_000_000, checkSequentialRetry),
	},
	{
		ID: "S1.concurrent-duplicates", Stage: 1, Lesson: lesson1 + "#the-race",
		Claim: "32 simultaneous requests with one key execute exactly once, and none of them gets a 5xx",
		Why:   "a double-click or an impatient retry races the original; two requests that both see \"no key yet\" both move money, and a 5xx tells the client nothing about whether it did",
		Run:   withScenario(1_000_000, checkConcurrentDuplicates),
	},
	{
		ID: "S1.staggered-duplicates", Stage: 1, Lesson: lesson1 + "#the-race",
		Claim: "8 to 16 requests with one key, spelled alike, arriving a few milliseconds apart, execute exactly once, whether the core answers at once or slowly",
		Why:   "retries do not arrive together: each one meets the original at another point of its work (before its claim, inside its transaction, just after its commit), and a design with a gap at any of them pays twice there",
		Run:   withScenario(10_000_000, checkStaggeredDuplicates),
	},
	{
		ID: "S1.retry-after-failure", Stage: 1, Lesson: lesson1 + "#what-you-decide",
		Claim: "after an internal failure between the claim and the money, the retry with the same key executes exactly once, also one sent while the failing original still waits on the core; after a refusal (insufficient funds), the retry is refused again, never told it was executed",
		Why:   "a key spent by a request that moved nothing blocks every retry of a payment that never happened: the client is told it was already done, and the customer's rent is never paid",
		Run:   withScenario(1_000_000, checkRetriesAroundAFailure),
	},
	{
		ID: "S1.missing-key", Stage: 1, Lesson: lesson1 + "#no-key-no-money",
		Claim: "a transfer or deposit without Idempotency-Key gets 400 missing-idempotency-key before the core is called, and nothing moves",
		Why:   "without a key the server cannot tell a retry from a new request, so every lost answer becomes a possible double payment",
		Run:   withScenario(1_000_000, checkMissingKey),
	},
	{
		ID: "S1.invalid-key", Stage: 1, Lesson: lesson1 + "#what-a-key-looks-like",
		Claim: "an empty, too long, non-ASCII, malformed or repeated Idempotency-Key gets 400 invalid-idempotency-key and nothing moves",
		Why:   "a key the server silently truncates, trims, decodes or picks one of is a key two clients can share, or one client can lose",
		Run:   withScenario(1_000_000, checkInvalidKey),
	},
	{
		ID: "S1.key-forms", Stage: 1, Lesson: lesson1 + "#what-a-key-looks-like",
		Claim: "any key of 1 to 255 printable ASCII characters is one key, quoted (Idempotency-Key: \"k\", with \\\" and \\\\ escaped) or bare; keys that differ only in letter case, a trailing character or a leading zero are two keys, and the retry of each is answered as its own",
		Why:   "clients following the IETF draft quote the key and older ones do not: if the two spellings are two keys, a retry by another library executes again; a server that folds, trims or truncates keys, or stores them as the numbers they spell, makes two clients' operations one, and the second never runs; one that reads a key's row back loosely (LIKE) answers a retry from another key's row",
		Run:   withScenario(10_000_000, checkKeyForms),
	},
	{
		ID: "S1.distinct-keys-same-body", Stage: 1, Lesson: lesson1 + "#one-key-one-operation",
		Claim: "two requests with different keys and the same body are two transfers, both executed",
		Why:   "paying the same rent twice in one month is the customer's decision; the key, not the body, says whether a request is a retry, and a server that guesses loses a real payment",
		Guard: "stage 0 has no keys and executes every request it is sent, so two requests are always two transfers; the check keeps a claim from taking the body, not the key, for what names an operation",
		Run:   withScenario(10_000_000, checkDistinctKeysSameBody),
	},
	{
		ID: "S1.same-key-edited-body", Stage: 1, Lesson: lesson1 + "#one-key-one-operation",
		Claim: "the same key sent again with the amount edited does not execute: the key alone names the operation, whatever the body",
		Why:   "a claim on the key and the body together takes a clerk's corrected resubmission for a new operation, and both amounts are paid; so is a retry whose client wrote the body again in other bytes",
		Run:   withScenario(1_000_000, checkSameKeyEditedBody),
	},
	{
		ID: "S1.replicas", Stage: 1, Lesson: lesson1 + "#several-servers-one-database",
		Claim: "with two server processes on one database, a retry that reaches the other process, and duplicates spread over both at once, execute once",
		Why:   "production runs several app servers behind a load balancer, and a retry lands on any of them: a claim kept in one process's memory is invisible to the others, and only the database is shared",
		Run:   checkReplicas,
	},
	{
		ID: "S1.fail-closed", Stage: 1, Lesson: lesson1 + "#fail-closed",
		Claim: "when the key store fails, the request gets 503 unavailable and nothing executes; once it is back, the retry executes exactly once",
		Why:   "executing without a claim is executing without protection: the retry that follows the outage pays a second time",
		Run:   withScenario(2_000_000, checkFailClosed),
	},

	// Stage 2: same key, another request.
	{
		ID: "S2.edited-resubmission", Stage: 2, Lesson: lesson2 + "#same-key-another-request",
		Claim: "the same key with any member of the body edited (amount, accounts, memo changed, added or removed, a metadata member added, changed, its letter case alone changed, or removed, a reference added) gets 422 idempotency-key-reused and moves nothing, and leaves the key naming the first request, whose unchanged retry is still a retry",
		Why:   "a clerk who fixes the amount and resubmits with the old key believes the new amount went through; answering \"already done\" (or the old result) silently pays the wrong amount, and executing it spends one key on two operations; a refusal that makes the key name the edit leaves the first request's own retry refused, and its client never learns that its money moved",
		Run:   withScenario(5_000_000, checkEditedResubmission),
	},
	{
		ID: "S2.edited-races-original", Stage: 2, Lesson: lesson2 + "#on-postgresql",
		Claim: "an edited copy sent at the same moment as its original, under the same key, is never told it was executed: one of the two runs, and the other gets 422 idempotency-key-reused (or, from stage 3, 409 request-in-progress when the first failed and gave its key back as the edit met it)",
		Why:   "a clerk who corrects a transfer while the first one is still on its way is told \"already executed\" for an amount that never moved, and walks away from it",
		Run:   withScenario(5_000_000, checkEditedRacesOriginal),
	},
	{
		ID: "S2.equivalent-bodies", Stage: 2, Lesson: lesson2 + "#the-canonical-form",
		Claim: "a retry whose body differs only in member order, whitespace, string escapes (\\u0041 for A) or number spelling (3e5 for 300000) is answered as the same request: 409 duplicate-request, or from stage 4 the stored answer, and never executes",
		Why:   "retries are rewritten by proxies, SDKs and other languages' JSON encoders; refusing one as a different request leaves the client unable to learn whether its money moved, and executing it pays twice",
		Guard: "stage 1 answers every retry of a used key 409 duplicate-request, whatever its body, so a rewritten retry is answered as a retry; the check keeps a fingerprint from being so strict that it refuses one",
		Run:   withScenario(5_000_000, checkEquivalentBodies),
	},
	{
		ID: "S2.fingerprint-is-rfc8785", Stage: 2, Lesson: lesson2 + "#a-fingerprint-others-can-compute",
		Claim: "the key table's fingerprint column holds the lowercase hex SHA-256 of the body's RFC 8785 canonical form, for bodies that Go's encoding/json writes otherwise, for text that a normalisation would change (Unicode NFC, spaces trimmed, line breaks rewritten) and for a body without the optional members",
		Why:   "another replica, the next version during a rolling upgrade, or a service in another language must compute the same fingerprint for the same request; one that differs refuses a client's retry as another request, or takes an edited request for a retry",
		Run:   withScenario(5_000_000, checkFingerprintIsRFC8785),
	},

	// Stage 3: in progress.
	{
		ID: "S3.retry-during-original", Stage: 3, Lesson: lesson3 + "#the-window",
		Claim: "a retry that arrives while the original runs gets 409 request-in-progress with Retry-After, and one transfer happens, whether the original waits long on the core or retries arrive a few ms apart with the core answering at once; once the original has answered, a retry is no longer told to wait; a retry whose read of the key's row fails is answered a 5xx, nothing executed, not a 409 that says what the row holds",
		Why:   "\"already done\" and \"still running\" need different client behaviour: read the result, or wait and retry; a client told \"done\" while the original may still fail walks away from a payment that never happened",
		Run:   checkRetryDuringOriginal,
	},
	{
		ID: "S3.release-after-failure", Stage: 3, Lesson: lesson3 + "#releasing-a-failed-claim",
		Claim: "after an internal failure before the money moved (a failed business write, a failed COMMIT of it, or a transaction for it that cannot begin after the core call), the retry with the same key executes exactly once, as does exactly one of retries sent at once, and one that meets the release is told to come back (409 request-in-progress with Retry-After) or executes, never told the key store failed; after a refusal (insufficient funds), the retry is not told to wait: it executes again (stage 3) or gets the stored refusal (stage 4 on)",
		Why:   "a key kept after a failed attempt blocks every retry of a payment that never happened: the customer's rent is never paid, and the server says it is busy or done; a key kept as failed and taken over by whichever retry reads it pays once for every retry that read it at once",
		Guard: "stage 2 claims the key in the transaction that moves the money, so a failure rolls the claim back with it and the retry finds the key free; the check keeps stage 3's claim, committed on its own, from being kept after a failure",
		Run:   withScenario(1_000_000, checkReleaseAfterFailure),
	},
	{
		ID: "S3.two-servers", Stage: 3, Lesson: lesson3 + "#releasing-a-failed-claim",
		Claim: "after a payment's business write fails, its retries, at once, through two server processes on one database: exactly one of them claims the key and executes, and the others get 409 request-in-progress, 409 duplicate-request or its stored answer",
		Why:   "a server runs as several processes (replicas, a rolling deploy); a claim that decides in Go which retry takes a failed attempt's key, kept safe by a mutex, is safe only among the retries that reach its process, and a retry on the other one takes the key too and pays again: only a decision the database makes is seen by every process",
		Guard: "stage 2 claims the key in the transaction that moves the money, so a failure rolls the claim back with it, and the retries, in either process, meet the INSERT's UNIQUE constraint; the check keeps stage 3's release from handing the key to more than one retry when the retries come through two processes",
		Run:   checkTwoServersRelease,
	},
	{
		ID: "S3.never-completed-without-money", Stage: 3, Lesson: lesson3 + "#completed-means-the-money-moved",
		Claim: "a key is completed only in the transaction that moved its money: never while the core call runs, never before that transaction commits, never after a failed or crashed business write",
		Why:   "a completed key is the server's promise that the money moved; a retry that trusts a broken promise gets \"done\" for a transfer that never happened",
		Run:   withScenario(1_000_000, checkNeverCompletedWithoutMoney),
	},
	{
		ID: "S3.completed-with-the-money", Stage: 3, Lesson: lesson3 + "#completed-means-the-money-moved",
		Claim: "the money and the key's completion commit together: a key store that fails at the completion leaves nothing moved and a retry that executes once; a crash right after the commit, or a commit whose answer is lost, leaves the key completed, and the retry does not pay again",
		Why:   "a completion in a transaction of its own, after the money, can fail or be cut off by a crash: the money has moved, and the key says it has not, so the client is told it failed (and pays again), or waits for good; and a commit that went through but answered an error completed the key, so a release that deletes it whatever its state hands the paid key to a retry that pays again",
		Guard: "stage 2 claims the key in the transaction that moves the money, so there is no completion that could fail, or be cut off by a crash, apart from the money; the check keeps stage 3's completion in that transaction",
		Run:   withScenario(1_000_000, checkCompletedWithTheMoney),
	},
	{
		ID: "S3.client-gives-up", Stage: 3, Lesson: lesson3 + "#a-client-that-gives-up",
		Claim: "a client that hangs up (mid-body, during the core wait, around the business write) can retry with the same key until it has an answer: its operation executes exactly once, and its key is never left in progress",
		Why:   "clients time out all the time; a server that treats a client gone away as a reason to keep the key (or to forget it after the money moved) leaves a payment that can never be made, or makes it twice",
		Guard: "stage 2 claims the key in the transaction that moves the money, so a client that hangs up rolls the claim back with the money; the check keeps stage 3's claim, committed on its own, from being left in progress when the client goes",
		Run:   withScenario(10_000_000, checkClientGivesUp),
	},

	// Stage 4: replay the answer.
	{
		ID: "S4.replay-byte-identical", Stage: 4, Lesson: lesson4 + "#store-the-answer",
		Claim: "a retry of a completed request gets the stored response of its own key: same status, same body bytes, same Content-Type, Location and Retry-After, also when another key sent the same body",
		Why:   "the client retried because it lost the first answer; only the same answer lets it finish as if nothing had gone wrong, and a different one (another id, another time) looks like a second transfer",
		Run:   withScenario(2_000_000, checkReplayByteIdentical),
	},
	{
		ID: "S4.replay-marker-only-on-replays", Stage: 4, Lesson: lesson4 + "#the-replay-marker",
		Claim: "Idempotent-Replayed: true is on every replay and on no other answer: no first answer, no 409 request-in-progress, no 422 idempotency-key-reused",
		Why:   "clients, logs and support staff count payments by first answers; a marker on a first answer hides a real payment, a missing one on a replay counts a payment twice; a marker on a 409 or a 422 about the key tells the client that this refusal is its request's stored answer, and it stops retrying a payment that is still running or already ran",
		Run:   withScenario(1_000_000, checkReplayMarkerOnlyOnReplays),
	},
	{
		ID: "S4.no-cookie-replayed", Stage: 4, Lesson: lesson4 + "#what-not-to-store",
		Claim: "a replay never carries the Set-Cookie of the answer it replays",
		Why:   "a session cookie belongs to the client that received it; replaying it hands that session to whoever retried, perhaps from another device",
		Guard: "stage 3 stores no answer and replays none (a retry gets 409), so it cannot send the first answer's cookie again; the check keeps stage 4 from storing every header of the answer",
		Run:   withScenario(1_000_000, checkNoCookieReplayed),
	},
	{
		ID: "S4.balance-after-unchanged", Stage: 4, Lesson: lesson4 + "#never-recompute",
		Claim: "a replay's balance_after and created_at stay what they were, after later transfers, deposits and time",
		Why:   "a replay rebuilt from today's balance tells the customer a balance that was never the result of this transfer or deposit: the receipt they keep is wrong",
		Run:   withScenario(2_000_000, checkBalanceAfterUnchanged),
	},
	{
		ID: "S4.insufficient-funds-replayed", Stage: 4, Lesson: lesson4 + "#a-refusal-is-an-answer",
		Claim: "a stored 422 insufficient-funds, with no Location, is replayed as it was, even after a deposit made the transfer affordable, and its key stays the refused request's: the amount lowered under it gets 422 idempotency-key-reused",
		Why:   "the client that lost the 422 must learn the answer it was given; executing the retry later, after money arrived, moves money the customer was told would not move; a Location on the refusal sends the client to read a transfer that was never made; a correction executed under the refused request's key makes one key name two requests, and the refused one's retry is told another request used its key",
		Run:   withScenario(100_000, checkInsufficientFundsReplayed),
	},
	{
		ID: "S4.answer-stored-with-the-money", Stage: 4, Lesson: lesson4 + "#store-the-answer",
		Claim: "the answer is stored in the transaction that moves the money: after a crash right after that commit, the retry gets the stored 201 of its own operation",
		Why:   "a key completed without its answer is a payment whose client can never learn how it went: every retry is refused, and the receipt (id, balance_after) is lost",
		Run:   withScenario(1_000_000, checkAnswerStoredWithTheMoney),
	},

	// Stage 5: whose key, and for how long.
	{
		ID: "S5.customers-scoped", Stage: 5, Lesson: lesson5 + "#whose-key",
		Claim: "two customers who send the same key string, at once or one after the other, get their own transfers and their own replays, never each other's, a customer's retry with its other token included, and neither one's failed request nor one's expired key takes the other's key with it",
		Why:   "keys are chosen by clients, and two clients can choose alike; a key shared across customers refuses one customer's payment, or replays another customer's transfer to them; a key scoped by the token rather than the customer pays again when the customer retries with another of its credentials (a phone and a web session, a rotated token); a claim given back, or an expired key forgotten, by its key string alone takes another customer's key of that string with it, and that customer's retry pays again",
		Run:   withScenario(2_000_000, checkCustomersScoped),
	},
	{
		ID: "S5.endpoints-scoped", Stage: 5, Lesson: lesson5 + "#one-key-per-endpoint",
		Claim: "the same key on POST /transfers and POST /deposits names two independent operations, and neither one's failed request nor one's expired key takes the other's key with it",
		Why:   "a client that numbers its requests per endpoint would have its deposit refused as a reused key, or answered with a transfer; a claim given back, or an expired key forgotten, by the customer and the key string without the route takes the other endpoint's key of that string with it, and that request's retry runs again",
		Run:   withScenario(2_000_000, checkEndpointsScoped),
	},
	{
		ID: "S5.retention-boundary", Stage: 5, Lesson: lesson5 + "#how-long-to-remember",
		Claim: "a retry just inside the retention period (on the lab clock) is replayed; just after it, the same key is a new request, run once however many retries of it arrive at once",
		Why:   "forget a key too early and a late retry pays twice; never forget it and the table grows without end while old keys refuse new operations; forget it once per retry that finds it expired and a burst of late retries pays once each",
		Run:   withScenario(4_000_000, checkRetentionBoundary),
	},
	{
		ID: "S5.two-servers", Stage: 5, Lesson: lesson5 + "#on-postgresql",
		Claim: "late retries of an expired key, at once, through two server processes on one database: one of them runs the payment again, and the others get 409 request-in-progress or its stored answer",
		Why:   "a server runs as several processes (replicas, a rolling deploy); a claim that decides in Go which late retry forgets an expired key, kept safe by a mutex, is safe only among the retries that reach its process, and a retry on the other one forgets the key too and pays again: only a decision the database makes is seen by every process",
		Run:   checkTwoServersForget,
	},
	{
		ID: "S5.purge-bounded", Stage: 5, Lesson: lesson5 + "#purging",
		Claim: "a purge removes every expired completed key and keeps every live one, which still replays",
		Why:   "a key table that only grows slows every claim and fills the disk; a purge that takes live keys turns the next retry into a second payment",
		Run:   withScenario(10_000_000, checkPurgeBounded),
	},
	{
		ID: "S5.purge-keeps-in-progress", Stage: 5, Lesson: lesson5 + "#never-purge-in-progress",
		Claim: "a purge never removes an in-progress key, however old: a retry of the running original still gets 409; once it completes, its retention counts from the completion",
		Why:   "the original is still moving the money; without its key, the next retry claims again and executes a second time",
		Guard: "stage 4 never purges and keeps every key for ever, so no key in progress is ever removed; the check keeps stage 5's purge to completed keys",
		Run:   checkPurgeKeepsInProgress,
	},

	// Stage 6: crashes happen.
	{
		ID: "S6.lease-takeover-once", Stage: 6, Lesson: lesson6 + "#taking-over-a-lease",
		Claim: "an in-progress key whose lease (read from the config in force, changed mid-run) has expired is taken over by exactly one of many retries, at once or a few ms apart, and executed once; a key claimed under a longer lease, whose taker died too, is taken over as soon as the lease in force at the takeover has run out, a longer one set since; the same key with an edited body gets 422 even then, and after the server process has started again",
		Why:   "a request that crashed after its claim leaves its key in progress; without a lease the payment is stuck forever, and with a takeover that two retries can both win it is paid twice",
		Run:   withScenario(1_000_000, checkLeaseTakeoverOnce),
	},
	{
		ID: "S6.two-servers", Stage: 6, Lesson: lesson6 + "#on-postgresql",
		Claim: "the retries of a key whose original crashed, sent at once after its lease has expired through two server processes on one database: exactly one of them takes the key over, calls the core and executes, and the others get 409 request-in-progress",
		Why:   "a server runs as several processes (replicas, a rolling deploy); a takeover that reads the lease and writes the new owner after (or deletes the expired key and claims it afresh), kept safe by a mutex, is safe only among the retries that reach its process, and a retry on the other one takes the key over too and calls the core again: only a decision the database makes is seen by every process",
		Run:   checkTwoServersTakeover,
	},
	{
		ID: "S6.takeover-own-key", Stage: 6, Lesson: lesson6 + "#taking-over-a-lease",
		Claim: "a retry takes over only its own key: another key with the same string, in progress with its lease expired (another customer's, or the same customer's on another route), is left to its own retry, which takes it over and executes",
		Why:   "a takeover that finds the key by its string alone, or by part of its scope, renews another key's expired lease, so that key's retry is told to wait for a request nobody runs, and calls the core for a payment whose own lease is live",
		Run:   withScenario(1_000_000, checkTakeoverOwnKey),
	},
	{
		ID: "S6.live-lease-409", Stage: 6, Lesson: lesson6 + "#a-live-lease",
		Claim: "while an in-progress key's lease is live, the original's or the one a takeover started, a retry gets 409 request-in-progress and nothing executes, even through another server process on the same database started again meanwhile",
		Why:   "a live lease means the original may still be running; a retry that takes it over early executes the payment a second time beside it, and a process that frees the keys left in progress when it starts frees those of the requests another process is running",
		Guard: "stage 5 never takes a key over, so a retry of a key in progress always gets 409 request-in-progress; the check keeps stage 6's takeover from stealing a lease that is still live",
		Run:   withScenario(1_000_000, checkLiveLease409),
	},
	{
		ID: "S6.late-original-fenced", Stage: 6, Lesson: lesson6 + "#a-late-original",
		Claim: "an original that outlives its lease while a retry takes its key over (a transfer, then a deposit) neither completes, nor frees the key, nor moves money, and is told to retry (409 request-in-progress with Retry-After): the retry that holds the lease executes, once; one that wakes after the retry has answered moves no money either, nor completes the key with a refusal of its own; one whose key no retry took over completes, with one call to the core, and one that completes while a retry's takeover waits stays completed: the retry executes nothing",
		Why:   "a slow original is not a dead one: if it still completes after a retry took its key over, the payment runs twice; if it deletes the key it lost, a third attempt claims it afresh and runs beside the retry; if it completes just before a takeover that does not ask for the key in progress, the retry opens the key again and pays twice; and a server runs as several processes, so a lock in one process's memory keeps out no retry that comes through another",
		Guard: "stage 5 never takes a key over, so no retry runs beside a slow original and there is nothing to fence; the check keeps stage 6's late original from completing or freeing a key a retry took over",
		Run:   checkLateOriginalFenced,
	},
	{
		ID: "S6.outage-mid-request", Stage: 6, Lesson: lesson6 + "#an-outage-mid-request",
		Claim: "when the key store fails after the claim, while the request waits on the core, the money rolls back and the retries converge to exactly one execution",
		Why:   "a claim the server could neither complete nor release must not block the operation for good, nor let it run twice",
		Run:   checkOutageMidRequest,
	},
	{
		ID: "S6.day-replay-through-faults", Stage: 6, Lesson: lesson6 + "#a-day-of-faults",
		Claim: "a generated day replayed through every failure point of a remote call ends with 0 doubles, 0 lost transfers, faithful replays and balances that add up",
		Why:   "each failure point is rare, but a day has thousands of payments; what is left after one bad day is the real measure of a payment API",
		Run:   checkDayReplayThroughFaults,
	},
	{
		ID: "S6.crash-recovery", Stage: 6, Lesson: lesson6 + "#crash-points",
		Claim: "after a crash inside the business write (of a transfer, then of a deposit), right after its commit, before the response, or a kill -9 under load, retries converge to exactly one execution, and no client is told success for money that never moved",
		Why:   "processes die between any two instructions; whatever was committed is the truth, and what the retry hears must match it",
		Run:   checkCrashRecovery,
	},

	// Stage 7: lost updates.
	{
		ID: "S7.two-clerks", Stage: 7, Lesson: lesson7 + "#two-clerks",
		Claim: "clerk A renames the account; clerk B, from the copy read before, raises its daily limit: B gets 412 and nothing changes, then re-reads and saves both changes",
		Why:   "a save based on a stale copy, if it is written, silently puts back what another clerk changed since, and nobody is told",
		Run:   checkTwoClerks,
	},
	{
		ID: "S7.many-clerks", Stage: 7, Lesson: lesson7 + "#many-clerks-at-once",
		Claim: "clerks that each raise the daily limit from the copy they read and sign the nickname (no two send the same change), at once, one of them reading the settings as the others save, while the core is slow, every settings write is held up before it runs and again before it commits, and a read of the settings after a save's write, or after a read of them in the same request, is held up, re-reading after each 412, end with every raise counted: each successful PUT replaced the version it was based on and answered the ETag of the one it made, with the settings its clerk sent",
		Why:   "two saves based on one version can both succeed only if one overwrote the other, and then a raise, or a cut, that its clerk was told was saved is gone; on PostgreSQL a save whose write waits for another's row lock checks again, on the row the other made, only what its own WHERE asks of the row's own columns, and a version compared in a subquery is the one read before the wait; a save answered another clerk's ETag holds its own settings under that version, and its next save from them puts back what the other changed; one answered another clerk's settings is told that its save made them; a GET that reads the settings and their version apart hands its clerk the settings from before another's save under that save's ETag, and the clerk's save from them puts back what the other changed",
		Run:   checkManyClerks,
	},
	{
		ID: "S7.two-servers", Stage: 7, Lesson: lesson7 + "#many-clerks-at-once",
		Claim: "the clerks of S7.many-clerks, every other one saving through a second server process on the same database, end with every raise counted: each successful PUT replaced the version it was based on and answered the ETag of the one it made, with the settings its clerk sent",
		Why:   "a server runs as several processes (replicas, a rolling deploy); a read of the version kept apart from the write by a mutex, or anything else in one process's memory, keeps apart only the clerks whose saves reach that process, and a clerk on the other one reads the same version and overwrites the first one's save: only a condition the database checks in the write is seen by every process",
		Run:   checkTwoServersSave,
	},
	{
		ID: "S7.retried-put", Stage: 7, Lesson: lesson7 + "#a-retried-put",
		Claim: "a PUT retried with the same If-Match after its answer was lost gets 412 once the settings moved on, and never overwrites a change another clerk saved since",
		Why:   "a client that lost the answer sends the same request again; if the stale retry is written, or told it was, the other clerk's change is undone behind everyone's back",
		Run:   checkRetriedPut,
	},
	{
		ID: "S7.old-copies", Stage: 7, Lesson: lesson7 + "#the-etag-names-the-version",
		Claim: "after a dozen saves, the last from an If-Match list of the first ETag and the current one, a PUT from the copy read before any of them, whichever, gets 412 precondition-failed and changes nothing",
		Why:   "a version compared as text, by prefix or as \"at least\" holds for the first saves and then lets a copy of version 1 match version 10, and one set from a listed tag plus one goes back to a version an old copy holds: either way a stale save puts an old limit back",
		Run:   checkOldCopies,
	},
	{
		ID: "S7.precondition-required", Stage: 7, Lesson: lesson7 + "#require-if-match",
		Claim: "a PUT of the settings without If-Match, or with If-Match: *, gets 428 precondition-required and changes nothing",
		Why:   "a PUT that names no version overwrites whatever it finds; if the server accepts it, every client that forgot If-Match can lose other clerks' changes",
		Run:   checkPreconditionRequired,
	},
	{
		ID: "S7.if-match-list", Stage: 7, Lesson: lesson7 + "#require-if-match",
		Claim: "If-Match is read as RFC 9110 says: a list (in one field or several, an empty field among them adding no tag) holds when any strong tag in it is the current ETag, first, last, between old ones or after a weak tag, and first or last of 100 (the most the contract reads) beside the tags of 99 other versions; a weak tag never matches, alone or in a list, and a header that is no list of tags, an empty one (a list of no tags, not a PUT without If-Match), a tag of a version the account has not reached (another account's ETag), alone or after an old one, or the current tag with a 0 put in before its first digit, or after its opening quote if it has none (\"v03\" for \"v3\"), or with its letters in the other case (\"V3\"), gets 412: nothing changes",
		Why:   "clients and proxies send If-Match as a list, and each tag in it names one version, spelled one way: a server that reads the list wrongly either refuses a clerk whose copy is current, or lets a stale copy, a weak tag or a tag it never sent name the version a daily limit is written over",
		Run:   checkIfMatchList,
	},
	{
		ID: "S7.daily-limit", Stage: 7, Lesson: lesson7 + "#the-money-behind-it",
		Claim: "clerk A lowers the daily limit; clerk B, from the copy read before, renames the account and gets 412; a transfer over A's limit is refused with 422 daily-limit-exceeded and moves nothing, one within it executes, and the next day the limit starts again; once A sets the limit to 0, a transfer within the old limit is refused too; and while a raise of that 0 waits on the core's confirmation, the settings stay as they were; so they do after a raise whose clerk hung up during that wait, until the core could have confirmed it",
		Why:   "a lost update of a limit is a money bug: a stale save that is written puts the old limit back, as does a save of 0 read as a member left out, and then transfers the owner capped can go through; a raise written before the core confirms it, or written when its clerk hung up before the confirmation came, is in force though the core never confirmed it",
		Run:   checkDailyLimit,
	},
	{
		ID: "S7.limit-refusal-replayed", Stage: 7, Lesson: lesson7 + "#the-money-behind-it",
		Claim: "a transfer refused for its daily limit is that key's answer for good: after the limit is raised, its retry gets the stored 422 daily-limit-exceeded again (its status, headers and JSON value), and nothing moves",
		Why:   "the client was told its transfer was refused; if a retry can still execute it, money moves for an operation its clerk was told had failed, and may have sent again under a new key",
		Run:   checkLimitRefusalReplayed,
	},
	{
		ID: "S7.etag-names-the-version", Stage: 7, Lesson: lesson7 + "#the-etag-names-the-version",
		Claim: "GET gives a strong ETag; a PUT answers 200 with the settings it saved (an empty nickname included) and a new ETag, whichever member changed, also when none did or when If-Match listed an old ETag before the current one, or the current one before a tag this account has not reached, that the next GET shows and the next PUT may use",
		Why:   "an ETag that misses a change (a daily limit, a write) lets a stale copy match; an answer that names a version GET does not show sends the clerk's next save to 412, and once the settings reach that version lets a stale copy through",
		Run:   checkETagNamesTheVersion,
	},
	{
		ID: "S7.settings-contract", Stage: 7, Lesson: lesson7 + "#the-contract",
		Claim: "the settings are the owner's only (401 without a token, 403 for another customer's account, 404 for none, whatever If-Match says or lacks), a PUT writes the account in its path and no other (another account saved as often, the customer's or another customer's, stays as it was, also after a PUT from a list), an invalid PUT body is 400 invalid-request, also without If-Match or from an old ETag, and so is an If-Match of more than 100 tags, the current one among them: nothing changes",
		Why:   "settings that another customer can read or change, a 428 or 412 to a stranger, who may not change the settings whatever If-Match says (a 412 tells it its ETag is not the current version, a 403 that it is), a save that also rewrites every other account at its version, or a limit of -1 or of a string that is saved, guard no money",
		Run:   checkSettingsContract,
	},
	{
		ID: "S7.settings-hidden-characters", Stage: 7, Lesson: lesson7 + "#the-contract",
		Claim: "a nickname holding a character a reader cannot see (a bidirectional override, a zero-width, private-use or unassigned character, a line separator, a joiner that joins nothing) or a byte that is not UTF-8 is 400 invalid-request and changes nothing; an emoji sequence joined by U+200D is saved",
		Why:   "a clerk reads the nickname before approving a payment: one that reads backwards or hides characters lets one account pass for another, and one cleaned up in silence is not the name the clerk typed",
		Run:   checkSettingsHiddenCharacters,
	},
	{
		ID: "S7.save-beside-transfers", Stage: 7, Lesson: lesson7 + "#one-conditional-write",
		Claim: "while a transfer waits on the core, a save that renames another account and raises its daily limit, whose own call to the core takes twice as long, does not hold it up: the transfer is answered 201 when its own core wait is over",
		Why:   "a save that waits on the core inside its writing transaction holds, on SQLite, the write lock of the whole database, and every transfer, whatever its account, waits for the core with it",
		Run:   checkSaveBesideTransfers,
	},

	// Stage 8: zombie resources.
	{
		ID: "S8.two-keys", Stage: 8, Lesson: lesson8 + "#one-invoice-two-keys",
		Claim: "an invoice paid a second time under a new Idempotency-Key gets 409 duplicate-reference with the Location of the first transfer, and nothing moves",
		Why:   "the key only knows its own retries: a clerk who pays the same invoice again, from a new form or another tab, sends a new key, and the invoice can be paid twice",
		Run:   checkTwoKeys,
	},
	{
		ID: "S8.two-servers", Stage: 8, Lesson: lesson8 + "#two-clerks-at-once",
		Claim: "clerks paying one invoice at once through two server processes on one database: exactly one transfer is made, and every other clerk gets 409 duplicate-reference with its Location",
		Why:   "a server runs as several processes (replicas, a rolling deploy); a mutex, or anything else in one process's memory, keeps apart only the clerks whose requests reach that process, and a clerk on the other one looks before the first insert commits and pays again: only the database's constraint is seen by every process",
		Run:   checkTwoServersPay,
	},
	{
		ID: "S8.two-clerks", Stage: 8, Lesson: lesson8 + "#two-clerks-at-once",
		Claim: "clerks paying one invoice at once under keys of their own, from two of the payer's accounts to two of the payee's, while the core is slow: exactly one transfer is made, and every other clerk gets 409 duplicate-reference with its Location",
		Why:   "a server that looks for the reference and then inserts it lets every clerk who looked before the first insert committed pay, even when it looks in the transaction that moves the money: the database must decide, with a constraint on (customer, reference) that the insert meets in that transaction; and every other clerk is told that the invoice was paid by that transfer and nothing moved this time, which a 201 does not say",
		Run:   checkTwoClerksPay,
	},
	{
		ID: "S8.after-expiry", Stage: 8, Lesson: lesson8 + "#after-the-key-expired",
		Claim: "after the first transfer's key has expired and been purged, and again a hundred years and a purge later, the same request (its late retry) and a new key with the same reference get 409 duplicate-reference, and nothing moves",
		Why:   "a key is forgotten after its retention period; a reference must not be: the retry that arrives after the purge is a zombie that pays the invoice again",
		Run:   checkAfterExpiry,
	},
	{
		ID: "S8.after-restart", Stage: 8, Lesson: lesson8 + "#after-the-key-expired",
		Claim: "an invoice paid before the server restarts, paid again after it under a new key, gets 409 duplicate-reference with the Location of the first transfer, and nothing moves",
		Why:   "a reference kept anywhere but the database, in the server's memory say, ends with the process that held it (a deploy, a crash), and the invoice is paid again: only the database outlives the process",
		Run:   checkAfterRestart,
	},
	{
		ID: "S8.edited", Stage: 8, Lesson: lesson8 + "#an-edited-payment",
		Claim: "the same reference with another amount, another memo, another of the payee's accounts and another amount, another customer's account, or an account of the payer's own, each under a new key, gets 409 duplicate-reference with the Location of the first transfer, and nothing moves",
		Why:   "a clerk who corrects the amount, the memo, the payee's account or the payee, or moves the money into an account of the payer's own instead, and submits again pays the invoice twice, once with each version, unless the paying customer's reference alone decides, on every transfer that carries one",
		Run:   checkEditedPayment,
	},
	{
		ID: "S8.refusal-replayed", Stage: 8, Lesson: lesson8 + "#the-refusal-is-an-answer",
		Claim: "a retry of the refused request, with its key, gets the stored 409 duplicate-reference again (its status, headers and JSON value), with its Location and Idempotent-Replayed: true, which the refusal, sent the first time, does not carry; a refusal that cannot be stored (the key store down: 503) leaves the invoice paid: its retry and a payment under a new key get 409 duplicate-reference with the first transfer's Location",
		Why:   "the refusal is that key's answer for good: recomputed, it is not marked as a replay, and the client cannot tell it from a fresh decision; marked the first time, it tells the client that its key had been answered before, and a stored answer can no longer be told from a fresh one; a refusal that fails paid nothing and holds no reference: a failure that gives the invoice back with the key deletes the first transfer's reference, and the invoice is paid again",
		Run:   checkRefusalReplayed,
	},
	{
		ID: "S8.late-original", Stage: 8, Lesson: lesson8 + "#the-refusal-is-an-answer",
		Claim: "an original that outlives its lease while its retry takes the key over and pays the invoice, then wakes up to find the reference held, stores nothing: every later retry gets the retry's 201 again (its status, headers and JSON value), and the original is not told it was refused",
		Why:   "the refusal is a completion like any other: stored without checking the lease, it writes 409 duplicate-reference over the retry's 201, and the client is told that its own payment is a duplicate of itself",
		Guard: "stage 7 holds no reference, so the late original makes its transfer again and its completion, fenced by the lease, rolls it back (S6.late-original-fenced), leaving the retry's 201 stored; the check keeps stage 8's refusal of a duplicate reference fenced by the lease too",
		Run:   checkLateOriginal,
	},
	{
		ID: "S8.similar-references", Stage: 8, Lesson: lesson8 + "#the-contract",
		Claim: "references that differ only slightly (in case, by a suffix, by a look-alike letter of another script, by a full-width digit, by an en dash for a hyphen, by an accent, by where a hyphen stands or whether it is there, by one space or two, by an _, a % or a ?, by a leading 0 or the last of twenty digits) are different invoices: each is paid with a transfer of its own, and paid again, is refused with the Location of its own transfer",
		Why:   "a reference is the customer's own name for an invoice, compared as written; one folded (to one case, its dashes into the hyphen, its accents taken off), cut short, stripped of its separators or stored as a number (0042 as 42, in a column SQLite gives NUMERIC affinity) refuses a different invoice as paid (INV-12-3 for INV-1-23), and that invoice stays unpaid; one looked up loosely (in one case, with LIKE, where _ and % match other characters, or with GLOB, where ? and * do) tells the clerk that another invoice's transfer paid it",
		Run:   checkSimilarReferences,
	},
	{
		ID: "S8.reference-with-quotes", Stage: 8, Lesson: lesson8 + "#the-contract",
		Claim: "an invoice number with an apostrophe and one with a double quote are each paid with a transfer of their own, and paid again, are refused with the Location of their own transfer",
		Why:   "a reference is any printable text, and every statement takes it as a parameter; one spliced into the SQL between quotes (fmt.Sprintf, with '%s' or %q) is cut short by an apostrophe (O'BRIEN-7) or a double quote (PO\"7\"), and the clerk gets a 5xx where the invoice is to be paid or refused: held that way, the invoice can never be paid",
		Run:   checkReferenceWithQuotes,
	},
	{
		ID: "S8.equal-looking-reference", Stage: 8, Lesson: lesson8 + "#the-contract",
		Claim: "a reference with é precomposed and the same reference with e and a combining accent are one invoice: the second gets 409 duplicate-reference with the Location of the first, and nothing moves",
		Why:   "two keyboards can spell one invoice number in two byte sequences that look the same; compared before normalisation, each pays the invoice",
		Run:   checkEqualLookingReference,
	},
	{
		ID: "S8.refused-leaves-payable", Stage: 8, Lesson: lesson8 + "#the-constraint-decides",
		Claim: "a transfer with a reference that is refused (insufficient funds, the daily limit, an unknown account) holds no reference: the invoice is then paid with a 201; so does one that fails (the key store down while it waits on the core: 503), and its retry pays the invoice; so does one whose server dies inside the transfer, and a payment under a new key pays the invoice",
		Why:   "a reference held before the transfer's outcome is known stays held when the transfer is refused, and one held outside the transaction that moves the money stays when that transaction rolls back, or when the process dies before the money's commit: the invoice can never be paid, and every later payment gets 409 for a transfer that never happened, or waits on it",
		Guard: "stage 7 holds no reference, so after the refused or failed payments the invoice is paid like any transfer; the check keeps stage 8 from holding a reference for a transfer that was refused, or that rolled back",
		Run:   checkRefusedLeavesPayable,
	},
	{
		ID: "S8.reference-write-fails", Stage: 8, Lesson: lesson8 + "#the-constraint-decides",
		Claim: "when the database refuses to hold a transfer's reference, the payment fails and moves nothing, its retry with the same key pays the invoice, and a payment under a new key then gets 409 duplicate-reference with the Location of the retry's transfer",
		Why:   "a reference insert whose error is looked at only for a unique violation, and otherwise dropped, lets the transfer commit without its reference: its client is told 201, and the invoice can be paid again, under any key; every error but a duplicate must fail the payment, which then moves nothing and can be retried",
		Run:   checkReferenceWriteFails,
	},
	{
		ID: "S8.other-customer", Stage: 8, Lesson: lesson8 + "#whose-reference",
		Claim: "other customers' transfers with the same reference execute, one of them to the payee of the first: a reference is unique per paying customer; the second customer, paying its own invoice again, gets 409 duplicate-reference with the Location of its own transfer",
		Why:   "customers number their invoices each their own way; a reference unique across customers, or held under the customer paid, refuses one customer's payment because of another's, and one looked up by its number alone answers a customer with another customer's transfer",
		Guard: "stage 7 holds no reference, so every customer's transfer executes like any other, and the second customer's second payment too (S8.two-keys fails that); the check keeps stage 8's reference unique per paying customer, not across customers nor per payee, and its refusal naming the customer's own transfer",
		Run:   checkOtherCustomerReference,
	},
	{
		ID: "S8.without-reference", Stage: 8, Lesson: lesson8 + "#without-a-reference",
		Claim: "transfers without a reference, before and after one with a reference, each execute under their own key, as in stage 7",
		Why:   "a transfer without a reference must not be held to one: stored as an empty reference, the second such transfer is refused, and its money never moves",
		Guard: "stage 7 holds no reference, so every transfer under a key of its own executes; the check keeps stage 8 from holding transfers without a reference to an empty one",
		Run:   checkWithoutReference,
	},
	{
		ID: "S8.reference-validated", Stage: 8, Lesson: lesson8 + "#the-contract",
		Claim: "a reference that is not a string, empty, over 64 characters, not printable or with a space at either end gets 400 invalid-request before its key is claimed: the same key with a valid body then executes",
		Why:   "a reference stored as sent, spaces and all, lets \"INV-7\" and \"INV-7 \" pay one invoice twice; one refused after its key was claimed leaves the key used for a request that never ran",
		Guard: "the kit's input rules, which every stage reads its body with, refuse a bad reference with 400 before any key is claimed, and stage 7 keeps none; the check keeps stage 8 from refusing a bad reference only after its key is claimed",
		Run:   checkReferenceValidated,
	},

	// Stage 9: delivery.
	{
		ID: "S9.posted-once", Stage: 9, Lesson: lesson9 + "#the-outbox",
		Claim: "every transfer that executed reaches the core ledger exactly once, with its accounts and amount; a refused one (insufficient funds, a reference already paid) never does; the outbox drains",
		Why:   "the core ledger keeps the bank's books of record: a transfer it never hears of is money that moved in one book and not the other, and one it hears of twice is counted twice",
		Run:   checkPostedOnce,
	},
	{
		ID: "S9.core-down", Stage: 9, Lesson: lesson9 + "#when-the-core-is-down",
		Claim: "while the core ledger is down, transfers still execute and answer 201 Created; once it is back, however long it was down (more than a month, on the lab clock), each reaches it exactly once",
		Why:   "a server that calls the core inside the request fails its customers while the core is down, or moves their money and never tells the core; a relay that gives up (after so many tries, or once a row has waited so long, by the lab clock or by the machine's read against a time of the lab's), or marks a row sent before the core said yes, loses the posting",
		Run:   checkCoreDown,
	},
	{
		ID: "S9.long-outage", Stage: 9, Lesson: lesson9 + "#when-the-core-is-down",
		Claim: "after the core ledger has refused the relay's tries for 4 s, and until it has refused 150 tries of each owed row or the kit has run 150 relay passes (12 s at most), each transfer made while it was down reaches it exactly once within 2 s of its return; during the outage, while no row was marked sent or set aside, no relay pass said it settled a row (the count it returns), and the relay tried each owed row at most five times for each pass the kit ran (relay_passes), or no more often than the kit's cadence (50 passes a second)",
		Why:   "an outage is over when the core is back, not when the relay next looks: a relay whose waits between tries of a row grow without a cap can keep the postings from a core that is back for about as long again as the outage lasted, another hour after an hour down",
		Run:   checkLongOutage,
	},
	{
		ID: "S9.core-flaps", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "transfers made while the core ledger is down still reach it exactly once when it comes back flapping (it refuses a posting for now, takes the next, refuses the next…, the refusals answered 503, 500, 502, 504, 429, 408, 404, 405 and 415 in turn, in an order of the seed's, each at least once)",
		Why:   "a relay that gives a row up after one refusal (a 404, 405 or 415 among them, refusals of the core's address or of how the request reached it, not of the posting), marks it sent on an answer it never got, or marks a whole batch sent because the core took part of it, loses postings a core that comes and goes would have taken",
		Run:   checkCoreFlaps,
	},
	{
		ID: "S9.token-rotated", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "while the core ledger refuses the relay's token (401 and 403 in turn, as while a rotation is rolled out), transfers still execute; once the token is mended, each reaches the core exactly once, and none is set aside as a dead letter",
		Why:   "a 401 or a 403 refuses the caller, not the posting: a relay that takes either for good (by the status alone, or by a list of its own of the statuses that mean later, which holds the 401 and not the 403) makes a dead letter of every posting sent while it lasts, postings the core takes as they are once the token is mended",
		Run:   checkTokenRotated,
	},
	{
		ID: "S9.batch-cut-short", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "while every batch request reaches the core ledger cut short (refused whole, 400 invalid-batch), transfers still execute; once the bodies arrive whole, each reaches the core exactly once, and none is set aside as a dead letter",
		Why:   "a batch refused whole says nothing of the postings in it, though its 400 is a status that would be for good for a posting of its own: a relay that reads the status and not whose refusal it is makes a dead letter of every posting in every batch cut short",
		Run:   checkBatchCutShort,
	},
	{
		ID: "S9.one-in-progress", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "while the core ledger answers one transfer's posting 409 (its key still in progress there) pass after pass, the relay marks the others sent; once the core takes it, it is posted exactly once, and nothing is set aside",
		Why:   "a 409 from the core says a request under that key has not finished, not that the posting was made: a relay that takes it for a yes loses the posting, one that stops its pass at it holds back every row behind it, and one that gives the row up after so many tries makes a dead letter of a posting the core would take",
		Run:   checkOneInProgress,
	},
	{
		ID: "S9.slow-core", Stage: 9, Lesson: lesson9 + "#two-writes-one-decision",
		Claim: "while the core ledger holds every posting unanswered, transfers still execute and answer 201 Created, also while the relay waits inside its call to the core; once it answers, each reaches it exactly once",
		Why:   "a transfer that waits for the core is as slow as the core, and fails when the core is slow beyond its timeout: the customer's answer must depend on the bank's own database alone, and a relay that holds the database while it calls the core (on SQLite, its transaction's write lock) makes every transfer wait for the core",
		Run:   checkSlowCore,
	},
	{
		ID: "S9.backlog", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "300 transfers made while the core ledger is down, the lab clock set back an hour after the first once the core refused the relay's try of it, many relay batches, all reach it exactly once, within 10 s once it answers at once, the oldest first: while new transfers keep coming as fast as the relay posts, the oldest of the backlog is posted before the core holds 300 postings",
		Why:   "after an outage the outbox holds far more than one pass sends: a relay that sends one batch and waits, or never gets past the first, leaves the core behind for as long as the load lasts, and one that reads the newest rows first, or the oldest by the time they were written (a clock set back puts every row written since first), sends each pass the transfers made during the last, and leaves the oldest owed for as long; one that sends a row refused for now again only once that clock reaches a time it set leaves it owed for as long as the clock went back",
		Run:   checkBacklog,
	},
	{
		ID: "S9.commit-order", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "transfers made 16 at a time by two customers paying each other from accounts that share no row, while the relay runs, the commit of one transfer of each round is held until a relay request reaches the core ledger, which holds the relay's requests until the round has answered, each reach it exactly once, and, while 16 transfers more are made as each of the relay's next requests waits in the core, no later than any of those",
		Why:   "transfers that run side by side commit their outbox rows in an order of their own, not that of their ids (on PostgreSQL): a relay that reads only the rows after the last one it settled never reads a row that committed after it had passed that row's id, and one that marks every owed row up to the last id it read marks a row that committed between its read and its mark, never sent; either way the core never hears of that transfer, and the held commit gives it the chance in every round, not by luck; one that looks behind its mark only once it finds nothing new hears of it only when transfers stop coming",
		Run:   checkCommitOrder,
	},
	{
		ID: "S9.commits-per-posting", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "160 transfers made 16 at a time while the core ledger is down are settled, once it is back, in at most one commit that changes outbox rows for every 5 postings",
		Why:   "each commit is a disk sync: a relay that marks each row sent in a write of its own spends one a posting, and under sustained load the outbox grows faster than it drains, however fast the core answers",
		Run:   checkCommitsPerPosting,
	},
	{
		ID: "S9.same-content", Stage: 9, Lesson: lesson9 + "#a-lost-answer",
		Claim: "transfers with the same accounts and amount, each under its own key, each reach the core ledger once, even when they are written in the same millisecond",
		Why:   "a core key made from what the posting says (accounts, amount) is the same for the second rent of the month, and one made from that and the time is the same for two rents written in the same millisecond: the core refuses the second as the first one's key reused, and the landlord's second rent never reaches the books",
		Run:   checkSameContent,
	},
	{
		ID: "S9.shared-client-key", Stage: 9, Lesson: lesson9 + "#a-lost-answer",
		Claim: "two customers' transfers sent under the same Idempotency-Key string, paying invoices of the same reference, a customer's transfer under its key again once the key has expired, and as many transfers again after a lab reset that empties the outbox while the core ledger keeps its postings, each reach the core ledger once",
		Why:   "the client's key is unique only per customer (stage 5), and only while it is kept, and an invoice's reference only per customer (stage 8): used as the core key, the key even scoped by the customer, one transfer's \"pay-1\" is refused as another's, and that transfer never reaches the books; the outbox row's id is unique only while the rows are kept, and once they are gone (a reset, a restore from a backup, sent rows deleted) SQLite numbers a new row one past the highest id still there (1 once none is), so a new posting carries a key the core has already posted",
		Run:   checkSharedClientKey,
	},
	{
		ID: "S9.two-servers", Stage: 9, Lesson: lesson9 + "#a-lost-answer",
		Claim: "with two server processes on one database, each with its relay, transfers sent through one and the other in turn each reach the core ledger exactly once",
		Why:   "a server runs as several processes (replicas, a rolling deploy), and each writes outbox rows: a core key kept unique by one process's memory (a number counted on from where the outbox stood when the process started) is unique in that process only, the other counts the same numbers, and the core refuses the second posting under each as the first's key reused: that transfer never reaches the books",
		Run:   checkTwoServersPost,
	},
	{
		ID: "S9.outbox-times", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "once the lab clock has been moved on by hours, a transfer's outbox row is written (created_at) and marked sent (sent_at) on the lab clock: written when the transfer is made, and sent when the core acknowledges it, after the lab clock moved on again while the core, back from an outage, held the relay's request unanswered; and a posting the core refused for good in that request is set aside (dead_at) when it refused it, after that move too; and a transfer whose wait on the core's confirmation the lab clock moved on in has its row written after that move",
		Why:   "the outbox's times are read on the lab clock, as every other time of the server: the delivery lag the lab, the dashboard and make delivery-check report is sent_at less created_at, a dead letter's time says when its posting was given up, and an instructor's timeline puts each row where the lab clock says; a time from the machine's clock reads as hours before the transfer was made once the lab clock was moved, and the lag is off by as much; a time read before the core answered says the row was done before it was",
		Run:   checkOutboxTimesThenWritten,
	},
	{
		ID: "S9.poison", Stage: 9, Lesson: lesson9 + "#dead-letters",
		Claim: "a posting the core ledger refuses for good (422, or 400 for one it cannot take) is set aside as a dead letter with the core's answer as it came, status and body, not marked sent, sent no more and kept past the retention period, a year on and more, and every other transfer still reaches it exactly once",
		Why:   "sent again, a poison posting is refused again, for ever: a relay that stops at it stops the books, one that retries it (a 400 taken for a refusal for now, say) never drains and tells no one, and one that drops it loses a transfer nobody will ever look for; a dead letter without the core's answer as it came, or with another posting's, leaves the person who looks at it without the cause; a dead letter also marked sent counts as delivered, and is lost when an operator sends it again by clearing its dead_at by hand, one read as owed is sent on every pass, until enough of them fill every batch, and one deleted once old, with the sent rows or a quarter after them, loses its transfer without a trace",
		Run:   checkPoison,
	},
	{
		ID: "S9.redrive", Stage: 9, Lesson: lesson9 + "#dead-letters",
		Claim: "a dead letter an operator sends again once its cause is fixed (POST /lab/outbox/redrive: its row owed again, dead_at cleared, the core's answer kept as its last) is sent by the relay under its key, posted exactly once, and a dead letter no more, whether the core never took it or took it once before it refused it (its answer lost); one sent again before its cause is fixed is set aside again, with the core's new answer",
		Why:   "a dead letter is money waiting for a person, and the person's fix is to make its row owed again, under the same key: a relay that reads owed by the answer's columns, which keep the core's last answer, or that remembers in memory the rows it set aside and skips them, never sends it, and the transfer never reaches the core, with no dead letter left to say so; one that sends it under a new key, as if the core kept its refusal under the old one, has the core post a second time a transfer it took before it refused it; and one that sets a row aside only while it holds no answer yet leaves a dead letter sent again too soon owed for ever, refused on every pass, with no dead letter to tell the operator that the fix did not take",
		Run:   checkRedrive,
	},
	{
		ID: "S9.lost-answers", Stage: 9, Lesson: lesson9 + "#a-lost-answer",
		Claim: "when the core ledger's answers are lost (before the posting was applied, or after) or never come (the call timed out), the relay sends again and each transfer is posted exactly once",
		Why:   "no answer says nothing of the posting, and a timeout is no answer: a relay that takes either for an acknowledgement loses the postings the core never applied, and one that sends again under a new key makes the core post the others twice; the key belongs to the outbox row, not to the attempt",
		Run:   checkLostCoreAnswers,
	},
	{
		ID: "S9.crash-after-post", Stage: 9, Lesson: lesson9 + "#a-crash-between-send-and-mark",
		Claim: "when the server dies after the core acknowledged a posting and before the relay marked it sent, the restarted server sends it again and it is posted exactly once",
		Why:   "the row still looks unsent after the restart, and the core has posted it already: sent again under any key but the one it went out under (one drawn per attempt, or one that changes with the process), it is posted twice; a relay that claims its rows in a commit of its own before it sends them, reads only the unclaimed ones and lets no claim run out never sends it again, and it stays owed for ever; had the server died before the send, the posting would be lost",
		Run:   checkCrashAfterPost,
	},
	{
		ID: "S9.crash-after-commit", Stage: 9, Lesson: lesson9 + "#a-crash-after-the-commit",
		Claim: "when the server dies right after a transfer committed, before its answer and before any relay ran, the restarted server still tells the core, exactly once",
		Why:   "a server that posts to the core after its own commit, in the request, loses the posting when it dies in between: only a row committed with the money survives the crash",
		Run:   checkCrashAfterCommitPosted,
	},
	{
		ID: "S9.outbox-write-fails", Stage: 9, Lesson: lesson9 + "#two-writes-one-decision",
		Claim: "when the database refuses a transfer's outbox row, and the next outbox row written after it, the client's retries with the same key and body leave the transfer executed exactly once and posted to the core ledger exactly once",
		Why:   "the row is the only promise to tell the core: a transfer that commits without it (the INSERT's error logged or dropped, or the row written again after the commit, in a transaction of its own, which a crash or a second refusal loses) has moved money, answered 201, and will never reach the books of record; its error must fail the transfer, which then moves nothing and can be retried",
		Run:   checkOutboxWriteFails,
	},
	{
		ID: "S9.settle-fails", Stage: 9, Lesson: lesson9 + "#the-relay",
		Claim: "when the server's database refuses the relay's next 64 writes to outbox rows (its marks, its dead letters), transfers still execute, and once it takes them again each reaches the core ledger exactly once and the outbox drains",
		Why:   "the relay's own database fails too (a full disk, a lock timeout): a relay that returns on the error and leaves its settling transaction open keeps its connection for as long as the process lives, and on SQLite, where that transaction began IMMEDIATE, the write lock, so no transfer commits again and no pass settles anything; on PostgreSQL each refusal takes a connection for good, until none is left",
		Run:   checkSettleFails,
	},
}
