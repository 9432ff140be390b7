package dayplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/kit/bank"
)

// Params shape a generated day. Rates are shares of operations in 0..1.
type Params struct {
	Ops int `json:"ops"`
	// Reset is the lab reset the plan is drawn for (POST /lab/reset); its
	// seed is the plan's.
	Reset bank.Params `json:"reset"`
	// Day is the span the operations' start times are spread over.
	Day Duration `json:"day"`
	// FaultRate is the share of operations whose first attempt meets a
	// failure point (some meet several in a row).
	FaultRate float64 `json:"fault_rate"`
	// RespellRate is the share of retried operations whose retries spell
	// the body differently.
	RespellRate     float64 `json:"respell_rate"`
	DoubleClickRate float64 `json:"double_click_rate"`
	EditRate        float64 `json:"edit_rate"`
	LateRetryRate   float64 `json:"late_retry_rate"`
	DepositRate     float64 `json:"deposit_rate"`
	// KeylessRate is the share of operations sent without an
	// Idempotency-Key, once, by a client that never retries: each is
	// executed on its own, and no retry can be matched to it. Stage 1 on
	// refuses them (400 missing-idempotency-key), so lab gen makes none
	// unless asked; S0.tally-generated asks.
	KeylessRate float64 `json:"keyless_rate,omitempty"`
	// SharedKeyRate is the share of operations whose key is an earlier
	// operation's key of another customer: a client library that draws
	// keys badly (the same seed on every phone). A server that scopes
	// keys to the customer (stage 5) executes both; one that does not
	// refuses the second as a reused key, or answers it with the first
	// customer's result.
	SharedKeyRate float64 `json:"shared_key_rate,omitempty"`
	// CrashRate is the share of operations before which the replay arms a
	// crash point of the server (Fate.Crash): a request that dies in the
	// middle leaves its key in progress, and only a lease (stage 6) frees it.
	CrashRate float64 `json:"crash_rate,omitempty"`
	// InvoiceRate is the share of transfers that pay an invoice: they
	// carry a reference, which from stage 8 on a customer can pay only
	// once, whatever the key.
	InvoiceRate float64 `json:"invoice_rate,omitempty"`
	// RepayRate is the share of operations that pay again, under a new
	// key, an invoice their customer has already paid: a second clerk who
	// did not know. Only a server that keeps one transfer per reference
	// (stage 8) refuses it.
	RepayRate float64 `json:"repay_rate,omitempty"`
	// SettingsEditRate is the share of operations that are two clerks
	// editing an account's settings at once (SettingsEdit). Only a server
	// that writes them under If-Match (stage 7) keeps both changes.
	SettingsEditRate float64 `json:"settings_edit_rate,omitempty"`
	// LateAfter is how long after the day the late retries come: longer
	// than the default retention of 24h.
	LateAfter Duration `json:"late_after"`
}

// DefaultParams are the parameters of lab gen without flags.
func DefaultParams(seed uint64, ops int) Params {
	reset := bank.DefaultParams()
	reset.Seed = seed
	reset.Customers = 8
	return Params{
		Ops: ops, Reset: reset, Day: Duration(10 * time.Hour),
		FaultRate: 0.25, RespellRate: 0.4, DoubleClickRate: 0.03, EditRate: 0.02,
		LateRetryRate: 0.01, DepositRate: 0.15, LateAfter: Duration(25 * time.Hour),
	}
}

// Rate is one of a day's shares of operations, as lab gen takes it.
type Rate struct {
	// Flag is lab gen's flag for it, without the dashes.
	Flag string
	// Value is the field of Params it sets.
	Value *float64
	// Help says what it is a share of, and which stage it tests.
	Help string
}

// Rates are p's shares of operations, each with its lab gen flag, in the
// order lab gen lists them.
func (p *Params) Rates() []Rate {
	return []Rate{
		{"fault-rate", &p.FaultRate, "share of operations whose first attempt meets a failure point"},
		{"respell-rate", &p.RespellRate, "share of retried operations whose retries spell the body differently"},
		{"double-click-rate", &p.DoubleClickRate, "share of operations double-clicked"},
		{"edit-rate", &p.EditRate, "share of operations a clerk resubmits with the same key and an edited amount"},
		{"late-rate", &p.LateRetryRate, "share of operations retried after the retention period"},
		{"deposit-rate", &p.DepositRate, "share of operations that are deposits"},
		{"keyless-rate", &p.KeylessRate, "share of operations sent once without an Idempotency-Key (stage 1 on refuses them)"},
		{"shared-key-rate", &p.SharedKeyRate, "share of operations sent with an earlier operation's key of another customer (a bad key generator; stage 5 scopes keys to the customer)"},
		{"crash-rate", &p.CrashRate, "share of operations before which the replay arms a crash point of the server (stage 6's leases recover from it)"},
		{"invoice-rate", &p.InvoiceRate, "share of transfers that pay an invoice: they carry a reference (stage 8 pays each reference once)"},
		{"repay-rate", &p.RepayRate, "share of operations that pay again, under a new key, an invoice their customer already paid (stage 8 refuses them)"},
		{"settings-edit-rate", &p.SettingsEditRate, "share of operations that are two clerks editing an account's settings, one from a stale copy (stage 7's If-Match keeps both changes)"},
	}
}

// Command is the lab gen command line that makes a plan with p again: the
// seed and size, and every flag whose value is not the default. A plan's
// header keeps it as the description of how the plan was made.
func (p Params) Command() string { return p.CommandFor("lab") }

// CommandFor is Command with the lab program named as program, for a
// line a person runs as printed: CommandFor("go run ./cmd/lab").
func (p Params) CommandFor(program string) string {
	d := DefaultParams(p.Reset.Seed, p.Ops)
	args := []string{program + " gen", "--seed", strconv.FormatUint(p.Reset.Seed, 10), "--ops", strconv.Itoa(p.Ops)}
	num := func(flag string, v, def float64) {
		if v != def {
			args = append(args, flag, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	num("--customers", float64(p.Reset.Customers), float64(d.Reset.Customers))
	num("--accounts", float64(p.Reset.AccountsPerCustomer), float64(d.Reset.AccountsPerCustomer))
	num("--opening-balance", float64(p.Reset.OpeningBalance), float64(d.Reset.OpeningBalance))
	def := d.Rates()
	for i, r := range p.Rates() {
		num("--"+r.Flag, *r.Value, *def[i].Value)
	}
	return strings.Join(args, " ")
}

// Validate reports the first parameter out of range.
func (p Params) Validate() error {
	if p.Ops < 1 || p.Ops > 10_000_000 {
		return fmt.Errorf("ops must be 1..10000000, got %d", p.Ops)
	}
	if err := p.Reset.Validate(); err != nil {
		return err
	}
	if p.Reset.Customers < 2 {
		return fmt.Errorf("a day needs at least 2 customers, got %d", p.Reset.Customers)
	}
	for _, r := range p.Rates() {
		if v := *r.Value; v < 0 || v > 1 || math.IsNaN(v) {
			return fmt.Errorf("%s must be between 0 and 1, got %g", r.Flag, v)
		}
	}
	if p.Day <= 0 || p.LateAfter <= 0 {
		return fmt.Errorf("day and late_after must be positive")
	}
	return nil
}

// version is the format version a plan drawn with p is written in: 1
// unless it may hold an invoice payment or a settings edit.
func (p Params) version() int {
	if p.InvoiceRate > 0 || p.RepayRate > 0 || p.SettingsEditRate > 0 {
		return Version
	}
	return 1
}

// pointWeights makes the two points that double money (the server ran the
// request and the client does not know) as common as the other five
// together would be on a bad day.
var pointWeights = map[Point]int{
	ConnectFails: 2, NeverArrives: 2, TruncatedBody: 2, Shed503: 2, Server5xx: 2,
	ResetAfterProcessing: 5, ResponseWithheld: 5,
}

var memos = []string{"", "", "rent", "월세", "lunch", "invoice 2291", "점심값", "refund", "school fees", "groceries", "gift"}

// crashPoints are the server's crash points a day can arm (labctl's names;
// the plan spells them out so that it stands on its own).
var crashPoints = []string{"crash-in-transfer", "crash-after-commit", "crash-before-response"}

var channels = []string{"mobile", "web", "branch"}

var nicknames = []string{"payroll", "rent account", "생활비", "savings", "invoices", "월급통장", "travel", "shop float"}

// Generate draws a day from seed. It is a pure function: the same seed
// and parameters give the same plan, byte for byte.
func Generate(seed uint64, p Params) (*Plan, error) {
	p.Reset.Seed = seed
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0xda7_91a4))
	customers := bank.Population(p.Reset)
	var everyAccount []string
	for _, c := range customers {
		everyAccount = append(everyAccount, c.Accounts...)
	}
	starts := make([]time.Duration, p.Ops)
	for i := range starts {
		starts[i] = time.Duration(r.Int64N(int64(p.Day))).Round(time.Millisecond)
	}
	slices.Sort(starts)
	width := len(strconv.Itoa(p.Ops))

	plan := &Plan{Header: Header{Format: Format, Version: p.version(), Seed: seed, Params: p, Command: p.Command()}, Ops: make([]Op, 0, p.Ops)}
	for i := range p.Ops {
		c := customers[r.IntN(len(customers))]
		op := Op{
			N: i + 1, At: Duration(starts[i]), Op: fmt.Sprintf("op-%0*d", width, i+1),
			Customer: c.ID, Key: drawKey(r),
		}
		memo := memos[r.IntN(len(memos))]
		meta := map[string]string{"op": op.Op, "channel": channels[r.IntN(len(channels))]}
		if r.Float64() < p.DepositRate {
			op.Endpoint = Deposits
			op.Amount = drawAmount(r, 10_000, 3_000_000)
			op.Body = encode(bank.DepositRequest{Account: c.Accounts[r.IntN(len(c.Accounts))], Amount: op.Amount, Memo: memo, Metadata: meta})
		} else {
			op.Endpoint = Transfers
			op.Amount = drawAmount(r, 1_000, 1_000_000)
			from := c.Accounts[r.IntN(len(c.Accounts))]
			to := from
			for to == from {
				to = everyAccount[r.IntN(len(everyAccount))]
			}
			op.Body = encode(bank.TransferRequest{From: from, To: to, Amount: op.Amount, Memo: memo, Metadata: meta})
		}
		if op.Endpoint == Transfers {
			drawInvoice(r, p, &op, plan.Ops)
		}
		op.Fate = drawFate(r, p, op)
		// Drawn only when asked for, like the keyless operations below.
		if p.SharedKeyRate > 0 && r.Float64() < p.SharedKeyRate {
			if key := keyOfAnother(r, plan.Ops, c.ID); key != "" {
				op.Key = key
			}
		}
		if p.CrashRate > 0 && r.Float64() < p.CrashRate {
			op.Fate.Crash = crashPoints[r.IntN(len(crashPoints))]
		}
		// Drawn only when asked for, so that a day without keyless
		// operations is the same day, byte for byte, as before they existed.
		if p.KeylessRate > 0 && r.Float64() < p.KeylessRate {
			op.Key, op.Fate = "", Fate{}
		}
		if p.SettingsEditRate > 0 && r.Float64() < p.SettingsEditRate {
			op = Op{N: op.N, At: op.At, Op: op.Op, Customer: c.ID, Endpoint: Settings, SettingsEdit: &SettingsEdit{
				Account: c.Accounts[r.IntN(len(c.Accounts))],
				// High enough that no transfer of a generated day meets
				// it: the edit changes what the bank enforces, not what
				// the day's transfers do, so that every stage moves the
				// same money.
				DailyLimit: (10 + r.Int64N(491)) * 100_000_000,
				Nickname:   nicknames[r.IntN(len(nicknames))],
			}}
		}
		plan.Ops = append(plan.Ops, op)
	}
	return plan, nil
}

// keyOfAnother draws an earlier operation's key that customer has not
// used yet (so that it is not a retry of its own); "" if there is none.
func keyOfAnother(r *rand.Rand, ops []Op, customer string) string {
	if len(ops) == 0 {
		return ""
	}
	used := func(key string) bool {
		for _, o := range ops {
			if o.Key == key && o.Customer == customer {
				return true
			}
		}
		return false
	}
	for i := r.IntN(len(ops)); i >= 0; i-- {
		if ops[i].Customer != customer && ops[i].Key != "" && !used(ops[i].Key) {
			return ops[i].Key
		}
	}
	return ""
}

// drawInvoice makes the transfer op an invoice payment, drawn only when
// asked for, like the keyless operations: the payment again of an earlier
// invoice of its customer (RepayRate), or of a new one (InvoiceRate).
func drawInvoice(r *rand.Rand, p Params, op *Op, earlier []Op) {
	if p.RepayRate > 0 && r.Float64() < p.RepayRate {
		if first := unpaidAgain(r, earlier, op.Customer); first != nil {
			b, paid := transferOf(op.Body), transferOf(first.Body)
			paid.Memo, paid.Metadata = b.Memo, b.Metadata
			op.Body, op.Amount, op.Reference, op.Repays = encode(paid), paid.Amount, paid.Reference, first.Op
			return
		}
	}
	if p.InvoiceRate > 0 && r.Float64() < p.InvoiceRate {
		b := transferOf(op.Body)
		b.Reference = "INV-" + strings.TrimPrefix(op.Op, "op-")
		op.Body, op.Reference = encode(b), b.Reference
	}
}

// transferOf decodes a transfer's body the generator encoded.
func transferOf(body []byte) bank.TransferRequest {
	var b bank.TransferRequest
	if err := json.Unmarshal(body, &b); err != nil {
		panic(err) // the generator encoded it
	}
	return b
}

// unpaidAgain draws an earlier invoice payment of customer that no
// operation pays again yet; nil if there is none.
func unpaidAgain(r *rand.Rand, ops []Op, customer string) *Op {
	if len(ops) == 0 {
		return nil
	}
	repaid := map[string]bool{}
	for _, o := range ops {
		repaid[o.Repays] = true
	}
	for i := r.IntN(len(ops)); i >= 0; i-- {
		if o := &ops[i]; o.Customer == customer && o.Reference != "" && o.Repays == "" && !repaid[o.Op] {
			return o
		}
	}
	return nil
}

func drawFate(r *rand.Rand, p Params, op Op) Fate {
	var f Fate
	if r.Float64() < p.FaultRate {
		f.Faults = append(f.Faults, drawPoint(r))
		for len(f.Faults) < 4 && r.Float64() < 0.3 {
			f.Faults = append(f.Faults, drawPoint(r))
		}
	}
	f.DoubleClick = r.Float64() < p.DoubleClickRate
	if r.Float64() < p.EditRate {
		f.EditedAmount = editAmount(r, op.Amount)
	}
	f.LateRetry = r.Float64() < p.LateRetryRate
	if (len(f.Faults) > 0 || f.LateRetry) && r.Float64() < p.RespellRate {
		f.RetryBody = respell(r, op.Body)
	}
	return f
}

func drawPoint(r *rand.Rand) Point {
	total := 0
	for _, p := range Points {
		total += pointWeights[p]
	}
	n := r.IntN(total)
	for _, p := range Points {
		if n -= pointWeights[p]; n < 0 {
			return p
		}
	}
	panic("unreachable")
}

// drawKey draws a key shaped like a version 4 UUID, what most client
// libraries send.
func drawKey(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
		r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffff_ffff_ffff)
}

// drawAmount draws a log-uniform amount in lo..hi, rounded the way people
// round money: to 1,000 won, and larger amounts to 10,000.
func drawAmount(r *rand.Rand, lo, hi int64) int64 {
	v := math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo))))
	unit := int64(1_000)
	if v >= 100_000 {
		unit = 10_000
	}
	return max(unit, int64(v)/unit*unit)
}

// editAmount is what a clerk changes the amount to: a slip of a digit, or
// a correction by a round sum.
func editAmount(r *rand.Rand, amount int64) int64 {
	switch r.IntN(3) {
	case 0:
		if amount*10 <= 1_000_000_000 {
			return amount * 10
		}
		return amount / 10
	case 1:
		if amount >= 10_000 {
			return amount / 10
		}
		return amount + 1_000
	default:
		return amount + 10_000*(1+r.Int64N(5))
	}
}

// encode writes v compactly without HTML escapes, as the plan stores it.
func encode(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // the body types always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
