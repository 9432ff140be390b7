package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/auth"
	"idemlab/kit/core"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	reference "idemlab/solutions"
	"idemlab/studentloop"
)

// solutions are the reference solutions, by stage. They always compile,
// so the lab command links them in; a student's stage is never linked in
// (see stageBinary).
var solutions = reference.ByStage

// solutionSubjects are the reference solutions as grader subjects, named
// solutions/stageN.
func solutionSubjects() []grader.Subject {
	out := make([]grader.Subject, len(solutions))
	for n, f := range solutions {
		out[n] = grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: f}
	}
	return out
}

// lastStage is the highest stage number.
const lastStage = 9

type serveFlags struct {
	stage    int
	solution bool
	db       string
	addr     string
	admin    string
	public   bool
	// accessLog is the file the server appends its access log to.
	accessLog string
	// replicas is how many server processes serve, on one database.
	replicas int
	// core is the core ledger the servers post to (stage 9 on), which
	// lab serve runs beside them, and coreDB the database of its postings.
	core, coreDB string
}

func runServe(ctx context.Context, in *invocation) error {
	var f serveFlags
	in.IntVar(&f.stage, "stage", 0, "the stage to serve, 0..9; stage 9 also runs the core ledger beside the servers, as a process of its own restarted if it dies, its postings in a database of its own beside the lab's (tmp/lab-stage9_core.db beside tmp/lab-stage9.db; DB_core beside DB on PostgreSQL; with --db :memory:, in the core's memory, checking a posting's form only)")
	in.BoolVar(&f.solution, "solution", false, "serve the reference solution (solutions/stageN) instead of your stages/stageN")
	in.StringVar(&f.db, "db", "", `the database: a SQLite file, ":memory:", or a PostgreSQL postgres://… URL (default $`+labdb.EnvURL+` if set, else tmp/lab-stageN.db; kept across restarts)`)
	in.StringVar(&f.addr, "addr", "127.0.0.1:8080", "the address to listen on")
	in.StringVar(&f.admin, "admin-token", "", "the token that opens /lab, visible ASCII characters (default: drawn at random and printed; with --public, at least 32 characters, hard to guess)")
	in.StringVar(&f.accessLog, "access-log", "", "append the server's access log (one JSON record per request, what lab tally reads) to this file")
	in.IntVar(&f.replicas, "replicas", 1, "run this many server processes on the one database (a file or a postgres:// URL), on consecutive ports: several app servers behind a load balancer, where a claim kept in a process's memory fails")
	in.BoolVar(&f.public, "public", false, "serve a classroom: allow an address other than loopback (the lab endpoints reset the bank and move its clock), demand a long admin token, draw customer tokens at random")
	if done, err := in.parse(); done {
		return err
	}
	if err := checkStage(f.stage, f.solution); err != nil {
		return err
	}
	if err := checkLoopback(f.addr, f.public); err != nil {
		return err
	}
	if f.replicas < 1 || f.replicas > 16 {
		return cannotRun(fmt.Errorf("--replicas %d: run 1 to 16 server processes", f.replicas))
	}
	if f.replicas > 1 && f.db == ":memory:" {
		return cannotRun(fmt.Errorf("--replicas %d needs a database the processes share: a file or a postgres:// URL, not :memory:", f.replicas))
	}
	if _, err := replicaAddr(f.addr, f.replicas-1); err != nil {
		return err
	}
	if err := checkAdminToken(f.admin, f.public); err != nil {
		return err
	}
	root, err := targets.Root()
	if err != nil {
		return err
	}
	if f.db == "" {
		f.db = os.Getenv(labdb.EnvURL)
	}
	if f.db == "" {
		f.db = filepath.Join("tmp", fmt.Sprintf("lab-stage%d.db", f.stage))
	}
	if f.db != ":memory:" && labdb.EngineOfTarget(f.db) == labdb.SQLite {
		if !filepath.IsAbs(f.db) {
			f.db = filepath.Join(root, f.db)
		}
		if err := os.MkdirAll(filepath.Dir(f.db), 0o755); err != nil {
			return err
		}
	}
	if f.admin == "" {
		f.admin = targets.AdminToken()
	}
	return serveProcesses(ctx, root, f, in.stdout, in.stderr)
}

// serverFlags choose the server lab grade and lab replay run against:
// your stages/stageN, built and started; the reference solutions/stageN,
// in this process (--solution); or a lab server already running (--url,
// with its --admin-token, since the commands reset it through /lab).
type serverFlags struct {
	stage    int
	solution bool
	url      string
	admin    string
	// db is where each server the command starts gets a fresh database
	// of its own (see freshDB).
	db string
}

// define adds the flags to fs: stage says what --stage is to the
// command, verb what it does to the server ("grade").
func (f *serverFlags) define(fs *flag.FlagSet, stage, verb string) {
	fs.IntVar(&f.stage, "stage", 0, stage)
	fs.BoolVar(&f.solution, "solution", false, verb+" the reference solutions/stageN, in this process, instead of your stages/stageN, built and started")
	fs.StringVar(&f.url, "url", "", verb+" a lab server that is already running (needs --admin-token)")
	fs.StringVar(&f.admin, "admin-token", "", "the admin token of the server at --url")
	defineFreshDB(fs, &f.db)
}

// defineFreshDB adds --db to fs, for a command whose servers each get a
// fresh database of their own.
func defineFreshDB(fs *flag.FlagSet, db *string) {
	fs.StringVar(db, "db", "", `the database engine: ":memory:" (SQLite), or a PostgreSQL postgres://… URL, where each server gets a fresh database of its own on that cluster, dropped at the end; the URL's own tables are never touched (default $`+labdb.EnvURL+` if set, else :memory:)`)
}

// freshDB resolves --db for a command whose servers each get a fresh
// database of their own: a postgres:// cluster, else ":memory:". A SQLite
// file is refused: servers that ran side by side on it, or reset it, would
// wipe its rows and each other's.
func freshDB(db string) (string, error) {
	if db == "" {
		db = os.Getenv(labdb.EnvURL)
	}
	switch {
	case db == "" || db == ":memory:":
		return ":memory:", nil
	case labdb.EngineOfTarget(db) == labdb.PostgreSQL:
		return db, nil
	}
	return "", cannotRun(fmt.Errorf(`--db %s: each server gets a fresh database of its own here; give ":memory:" (SQLite) or a postgres:// URL (lab serve --db serves a file)`, db))
}

// checkServerURL refuses a --url that is not a server's http:// or
// https:// URL. The host and port alone, as the dashboard's pane shows
// them (127.0.0.1:8080), failed later in a request, with Go's words for
// it ("first path segment in URL cannot contain colon").
func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	if !strings.Contains(s, "://") {
		return cannotRun(fmt.Errorf("--url %s: a server's URL, with its scheme: --url http://%s", s, s))
	}
	return cannotRun(fmt.Errorf("--url %s: a server's URL, http:// or https://, e.g. --url http://127.0.0.1:8080", s))
}

// freshDB resolves f's --db (see freshDB), and refuses it beside --url:
// the server there has a database of its own, which lab does not choose.
// It refuses a --url that is no server's URL (checkServerURL) too.
func (f *serverFlags) freshDB() (string, error) {
	if f.url != "" {
		if err := checkServerURL(f.url); err != nil {
			return "", err
		}
	}
	if f.url != "" && f.db != "" {
		return "", cannotRun(errors.New("--db chooses the database of the servers lab starts; the server at --url keeps its own"))
	}
	return freshDB(f.db)
}

// checkStage refuses a stage the lab does not have.
func checkStage(n int, solution bool) error {
	switch {
	case n < 0 || n > lastStage:
		return cannotRun(fmt.Errorf("--stage %d: the stages are 0..%d", n, lastStage))
	case solution && n >= len(solutions):
		return cannotRun(fmt.Errorf("--stage %d --solution: this build of lab has solutions up to stage %d", n, len(solutions)-1))
	}
	return nil
}

// checkLoopback refuses an address that is not host:port, with a port
// number from 0 to 65535, and one beyond this machine without --public:
// anyone holding the admin token could reset the bank.
func checkLoopback(addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return cannotRun(fmt.Errorf("--addr %q: %v", addr, err))
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return cannotRun(fmt.Errorf("--addr %q: the port must be a number from 0 to 65535 (0: any free port)", addr))
	}
	if public || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return cannotRun(fmt.Errorf("--addr %s is not a loopback address; the lab endpoints reset the bank and move its clock, so pass --public if you mean it", addr))
}

// MinPublicAdminToken is the shortest admin token a public server takes:
// whoever guesses it can reset the bank and move its clock.
const MinPublicAdminToken = 32

// MinPublicAdminTokenBits is the least entropy a public server's admin
// token must hold by auth.EntropyBits' estimate, which 32 hexadecimal
// digits drawn at random (openssl rand -hex 16) always meet.
const MinPublicAdminTokenBits = 80

// checkAdminToken refuses an admin token that no Authorization header
// can carry as it is (a lab server that took it could never be opened),
// and on a public server one that is short or easy to guess. An empty
// one is drawn later, long enough.
func checkAdminToken(token string, public bool) error {
	if token == "" {
		return nil
	}
	if at, c := auth.FirstInvisible(token); at > 0 {
		return cannotRun(fmt.Errorf("--admin-token: character %d is %q (%U); a token is made of visible ASCII characters, ! to ~, the only ones an Authorization header carries as they are", at, c, c))
	}
	if !public {
		return nil
	}
	const draw = "(leave it out and one is drawn, or draw one with openssl rand -hex 16)"
	switch {
	case len(token) < MinPublicAdminToken:
		return cannotRun(fmt.Errorf("--admin-token is %d characters; a --public server needs at least %d %s", len(token), MinPublicAdminToken, draw))
	case strings.Count(token, token[:1]) == len(token):
		return cannotRun(fmt.Errorf("--admin-token is one character repeated; a --public server needs a token no one can guess %s", draw))
	}
	if bits := auth.EntropyBits(token); bits < MinPublicAdminTokenBits {
		return cannotRun(fmt.Errorf("--admin-token holds about %.0f bits of entropy (repeated characters and patterns count for nothing); a --public server needs %d %s", bits, MinPublicAdminTokenBits, draw))
	}
	return nil
}

// process is one process lab serve runs and starts again when it dies.
type process struct {
	name  string
	start func(context.Context) error
	wait  func(context.Context) error
	pid   func() int
	url   func() string
}

// serveProcesses runs the stage as f.replicas server processes on one
// database (the student's test binary, or this binary for a reference
// solution) and, from stage 9 on, the core ledger as a process of its own
// with its postings in a database of its own (labdb.Sibling), until ctx
// ends. Like an orchestrator, it starts again any process that dies, on
// its port, and says so on stderr: a server killed with kill -9 leaves the
// others, the core and the postings alone. It returns an error if a
// process cannot start, or cannot start again.
func serveProcesses(ctx context.Context, root string, f serveFlags, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin, subject := self, fmt.Sprintf("solutions/stage%d", f.stage)
	what := "the reference solution " + subject
	if !f.solution {
		compiling(stderr, fmt.Sprintf("stages/stage%d", f.stage))
		if bin, err = stageBinary(ctx, root, f.stage, stderr); err != nil {
			return err
		}
		subject, what = "", fmt.Sprintf("your stages/stage%d (%s)", f.stage, relative(root, bin))
	}
	var procs []process
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].wait(canceled)
		}
	}()
	if f.stage >= grader.CoreStage {
		if f.coreDB, err = labdb.Sibling(ctx, f.db, "_core"); err != nil {
			return fmt.Errorf("make the core ledger's database: %w", err)
		}
		c := &targets.CoreChild{Binary: self, DB: f.coreDB, Stderr: stderr}
		if f.db != ":memory:" {
			c.Books = f.db
		}
		if err := c.Start(ctx); err != nil {
			return err
		}
		procs = append(procs, process{name: "the core ledger", start: c.Start, wait: c.Wait, pid: c.Pid,
			url: func() string { return core.NewClient(c.URL, nil).URL() }})
		f.core = c.URL
	}
	var urls []string
	for i := range f.replicas {
		addr, err := replicaAddr(f.addr, i)
		if err != nil {
			return err
		}
		// Its clients come over the network, many at once, and come back
		// at once after a crash: its connections are opened before it
		// serves (on PostgreSQL).
		c := &targets.Child{Binary: bin, Subject: subject, DB: f.db, Admin: f.admin, Addr: addr,
			AccessLog: f.accessLog, RandomTokens: f.public, OpenAhead: true, Stderr: stderr, CoreURL: f.core}
		name := "the server"
		if f.replicas > 1 {
			// They share the lab's clock, config and resets: the first
			// starts the lab with its config, the others (and any
			// replica started again) adopt the one in force.
			name, c.Replica = fmt.Sprintf("replica %d", i+1), labctl.Join
			if i == 0 {
				c.Replica = labctl.Lead
			}
		}
		if err := c.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		procs = append(procs, process{name: name, start: c.Start, wait: c.Wait, pid: c.Pid, url: func() string { return localURL(c.URL) }})
		urls = append(urls, c.URL)
	}
	if f.replicas > 1 {
		what = fmt.Sprintf("%s, as %d processes on one database", what, f.replicas)
	} else {
		what += ", as a process of its own"
	}
	printBanner(stdout, f, what, urls[0], urls[1:])
	printProcesses(stdout, procs)
	return supervise(ctx, procs, stderr)
}

// canceled is a context already done: waiting with it stops a process.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// supervise starts again each of procs that exits, until ctx ends.
func supervise(ctx context.Context, procs []process, stderr io.Writer) error {
	exited := make(chan int)
	watch := func(i int) {
		go func() {
			procs[i].wait(ctx)
			select {
			case exited <- i:
			case <-ctx.Done():
			}
		}()
	}
	for i := range procs {
		watch(i)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case i := <-exited:
			p := procs[i]
			fmt.Fprintf(stderr, "lab serve: %s (pid %d) exited; starting it again, as an orchestrator would\n", p.name, p.pid())
			if err := p.start(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s exited and could not start again: %w", p.name, err)
			}
			fmt.Fprintf(stderr, "lab serve: %s is back on %s (pid %d)\n", p.name, p.url(), p.pid())
			watch(i)
		}
	}
}

func relative(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// replicaAddr is the address replica i (from 0) listens on: addr's port
// plus i, or any free port if addr's is 0. addr has passed checkLoopback.
func replicaAddr(addr string, i int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", cannotRun(fmt.Errorf("--addr %q: %v", addr, err))
	}
	p, err := strconv.Atoi(port)
	switch {
	case err != nil:
		return "", cannotRun(fmt.Errorf("--addr %q: the port must be a number", addr))
	case p == 0:
		return addr, nil
	case p+i > 65535:
		return "", cannotRun(fmt.Errorf("--addr %q: replica %d would listen on port %d, past 65535", addr, i+1, p+i))
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i)), nil
}

func printBanner(w io.Writer, f serveFlags, what, listening string, listeningReplicas []string) {
	// The commands are typed on this machine: a server that listens on
	// every address is reached here on the loopback address.
	url, replicas := localURL(listening), []string{}
	for _, r := range listeningReplicas {
		replicas = append(replicas, localURL(r))
	}
	db := f.db
	if labdb.EngineOfTarget(db) == labdb.PostgreSQL {
		db = labdb.Redacted(db) + "  (PostgreSQL; kept across restarts)"
	} else if db != ":memory:" {
		db += "  (kept across restarts; --db :memory: for none)"
	}
	fmt.Fprintf(w, "lab serve: stage %d, %s\n", f.stage, what)
	fmt.Fprintf(w, "  url          %s\n", url)
	for _, r := range replicas {
		fmt.Fprintf(w, "  replica      %s\n", r)
	}
	fmt.Fprintf(w, "  database     %s\n", db)
	if f.core != "" {
		cl := core.NewClient(f.core, nil)
		fmt.Fprintf(w, "  core ledger  %s  (a process of its own; postings in %s)\n", cl.URL(), labdb.Redacted(f.coreDB))
		fmt.Fprintf(w, "  core token   %s  (the servers hold it; GET /postings with it)\n", cl.Token())
	}
	fmt.Fprintf(w, "  admin token  %s\n", f.admin)
	fmt.Fprintf(w, "\nset up a shell for the examples of docs/api.md:\n")
	fmt.Fprintf(w, "  export LAB=%s ADMIN=%s\n", url, f.admin)
	if len(replicas) > 0 {
		fmt.Fprintf(w, "watch every replica live, each request marked with the one that answered:\n")
		fmt.Fprintf(w, "  %s dash --url %s --token %s\n", program(), strings.Join(append([]string{url}, replicas...), ","), f.admin)
	} else {
		fmt.Fprintf(w, "watch it live:\n")
		fmt.Fprintf(w, "  %s dash --url %s --token %s\n", program(), url, f.admin)
	}
	if f.core != "" {
		fmt.Fprintf(w, "replay a day into it, the core ledger's postings reconciled too:\n")
		fmt.Fprintf(w, "  %s replay --log PLAN --url %s --admin-token %s --core %s\n", program(), url, f.admin, f.core)
	}
	fmt.Fprintf(w, "reset the lab (seed 1: 4 customers with 2 accounts of 10,000,000 won each):\n")
	fmt.Fprintf(w, "  curl -s -X POST %s/lab/reset -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{\"seed\":1}'\n", url, f.admin)
	if f.public {
		printClassroom(w, listening)
	}
}

// printProcesses lists the processes lab serve watches, each with its
// pid: kill one (kill -9 PID) and lab serve starts it again. A server
// alone has no others to keep serving, so its line says only that. The
// Ctrl-C line ends the banner.
func printProcesses(w io.Writer, procs []process) {
	if len(procs) == 1 {
		fmt.Fprintf(w, "process (kill -9 it: lab serve starts it again):\n")
	} else {
		fmt.Fprintf(w, "processes (kill -9 one: lab serve starts it again, the others keep serving):\n")
	}
	for _, p := range procs {
		fmt.Fprintf(w, "  pid %-8d %s\n", p.pid(), p.name)
	}
	fmt.Fprintf(w, "Ctrl-C stops the server.\n")
}

// printClassroom says what a public server's instructor shares with the
// students, and what they keep.
func printClassroom(w io.Writer, url string) {
	fmt.Fprintf(w, "\npublic: a classroom server. Share with the students:\n")
	urls := studentURLs(url)
	for _, u := range urls {
		fmt.Fprintf(w, "  url          %s\n", u)
	}
	if onlyLoopback(urls) {
		// --public without --addr listens where no student can reach.
		fmt.Fprintf(w, "  but          it listens on loopback only: no other machine reaches it; --addr 0.0.0.0:PORT\n")
		fmt.Fprintf(w, "               listens on every address of this machine\n")
	}
	fmt.Fprintf(w, "  a customer   the reset's answer lists each customer's id, two tokens (token, other_token:\n")
	fmt.Fprintf(w, "               either signs in as that customer) and accounts: give each student one.\n")
	fmt.Fprintf(w, "               The tokens are drawn at random at every reset (not from the seed, whose\n")
	fmt.Fprintf(w, "               tokens anyone can draw), so a new reset means new tokens to hand out.\n")
	fmt.Fprintf(w, "Keep the admin token to yourself: it resets the bank and moves the clock.\n")
	fmt.Fprintf(w, "Limits on every client: headers within %v and at most %d KiB (else 431), a body within %v of\n",
		server.HeaderTimeout, server.MaxHeaderBytes>>10, server.DefaultBodyTimeout)
	fmt.Fprintf(w, "its headers (else 408), an answer within %v, idle connections closed after %v.\n",
		server.WriteTimeout, server.IdleTimeout)
}

// localURL is url as this machine reaches it: the loopback address for a
// server that listens on every address (0.0.0.0, or ::, which a listener
// on 0.0.0.0 reports too), else url.
func localURL(url string) string {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		return url
	}
	return "http://" + net.JoinHostPort("127.0.0.1", port)
}

// onlyLoopback says whether every one of urls names a loopback host.
func onlyLoopback(urls []string) bool {
	for _, u := range urls {
		host, _, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return false
		}
	}
	return len(urls) > 0
}

// studentURLs lists the URLs that reach a server listening at url from
// other machines: this machine's addresses, when it listens on all of
// them (0.0.0.0 is every IPv4 address, :: every address); else url.
func studentURLs(url string) []string {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	ip := net.ParseIP(host)
	if err != nil || ip == nil || !ip.IsUnspecified() {
		return []string{url}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return []string{url}
	}
	var out []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || (ip.To4() != nil && n.IP.To4() == nil) {
			continue
		}
		out = append(out, "http://"+net.JoinHostPort(n.IP.String(), port))
	}
	if len(out) == 0 {
		return []string{url}
	}
	return out
}

// stageBinary compiles the test binary of the student's stages/stageN into
// tmp/bin. The lab command never links a student's stage: a stage that
// does not compile yet breaks only itself, and says so here.
func stageBinary(ctx context.Context, root string, n int, stderr io.Writer) (string, error) {
	return testBinary(ctx, root, fmt.Sprintf("stages/stage%d", n), stderr)
}

// compiling says on w that a command compiles dir before it starts: on a
// cold cache that takes a minute, through which the command said nothing
// and looked hung.
func compiling(w io.Writer, dir string) {
	fmt.Fprintf(w, "lab: compiling %s (go test -c) first; on a cold cache that takes a minute or so\n", dir)
}

// testBinary compiles the test binary of the package in dir (relative to
// root) into tmp/bin and returns its path. Its TestMain is gradertest.Main,
// so it serves its stage when started as a targets.Child.
func testBinary(ctx context.Context, root, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(root, "tmp", "bin", strings.ReplaceAll(dir, "/", "-")+".test")
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./"+dir)
	cmd.Dir = root
	// Stopped, the build stops whole: the go command's compiler and
	// linker too, which a kill of the go command alone leaves running.
	studentloop.KillGroupOnCancel(cmd)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			// Stopped (Ctrl-C, a deadline) while it compiled: the build
			// was cut short, and says nothing of the student's code.
			return "", cannotRun(fmt.Errorf("the build of %s was stopped before it ended: %w", dir, context.Cause(ctx)))
		}
		fmt.Fprint(stderr, out.String())
		return "", cannotRun(fmt.Errorf("%s does not compile (go test -c ./%s): fix it, or use the reference with --solution", dir, dir))
	}
	return bin, nil
}

// startStage runs a stage's test binary as a lab server (a targets.Child)
// on f.addr (":0" style ports are fine), with f's database, admin token,
// access log and public mode, its standard error on stderr, and waits
// until it answers. The binary's TestMain is gradertest.Main, which serves
// instead of testing when it is started as a child.
func startStage(ctx context.Context, bin string, f serveFlags, stderr io.Writer) (*targets.Child, error) {
	child := &targets.Child{Binary: bin, DB: f.db, Admin: f.admin, Addr: f.addr, AccessLog: f.accessLog, RandomTokens: f.public, Stderr: stderr, CoreURL: f.core}
	if err := child.Start(ctx); err != nil {
		return nil, err
	}
	return child, nil
}
