// mlagent: a bare hashicorp/memberlist 0.2.2 agent (Debian's
// golang-github-hashicorp-memberlist-dev) for the knobs the serf 0.9.4 agent
// does not expose, chiefly GossipVerifyIncoming=false: the encryption
// rollout mode in which an agent with a key still accepts plaintext.
//
// It joins the given peers and rewrites -members-file (JSON, atomically)
// every -interval with memberlist's Members(): the nodes neither dead nor
// left, each with its address. Their status is always "alive": memberlist
// 0.2.2 keeps the state in nodeState and never fills Node.State, so a
// suspect node is listed alive (as serf members shows it, too). It exits 0 on
// SIGTERM/SIGINT after a graceful leave. A panic inside memberlist (the
// crash packet) ends the process like it ends serf: exit status 2 and the
// Go stack trace on stderr.
//
// Build (offline, Debian packages only):
//
//	GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off go build -o mlagent ./tests/serf/mlagent
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

type member struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Port   uint16 `json:"port"`
	Status string `json:"status"`
}

func main() {
	name := flag.String("name", "", "node name (required)")
	bind := flag.String("bind", "", "IPv4 address to bind and advertise (required)")
	port := flag.Int("port", 7946, "UDP and TCP port")
	key := flag.String("encrypt", "", "base64 key of 16, 24 or 32 bytes (empty: no encryption)")
	verifyIn := flag.Bool("verify-incoming", true, "with a key: refuse plaintext (false: rollout mode, plaintext accepted)")
	verifyOut := flag.Bool("verify-outgoing", true, "with a key: encrypt what we send (false: send plaintext)")
	join := flag.String("join", "", "comma-separated host:port of peers to join")
	profile := flag.String("profile", "lan", "timing profile: lan or local")
	membersFile := flag.String("members-file", "", "where to write the member list (JSON); required")
	interval := flag.Duration("interval", 100*time.Millisecond, "how often to rewrite -members-file")
	logFile := flag.String("log", "", "memberlist log file (default stderr)")
	flag.Parse()
	if *name == "" || *bind == "" || *membersFile == "" {
		fmt.Fprintln(os.Stderr, "mlagent: -name, -bind and -members-file are required")
		os.Exit(2)
	}
	if net.ParseIP(*bind) == nil {
		fmt.Fprintf(os.Stderr, "mlagent: -bind %q is not an IP address\n", *bind)
		os.Exit(2)
	}

	var c *memberlist.Config
	switch *profile {
	case "lan":
		c = memberlist.DefaultLANConfig()
	case "local":
		c = memberlist.DefaultLocalConfig()
	default:
		fmt.Fprintf(os.Stderr, "mlagent: -profile %q: lan or local\n", *profile)
		os.Exit(2)
	}
	c.Name = *name
	c.BindAddr = *bind
	c.BindPort = *port
	c.AdvertiseAddr = *bind
	c.AdvertisePort = *port
	var out io.Writer = os.Stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mlagent: %v\n", err)
			os.Exit(2)
		}
		out = f
	}
	c.LogOutput = out
	if *key != "" {
		k, err := base64.StdEncoding.DecodeString(*key)
		if err != nil || (len(k) != 16 && len(k) != 24 && len(k) != 32) {
			fmt.Fprintln(os.Stderr, "mlagent: -encrypt must be base64 of 16, 24 or 32 bytes")
			os.Exit(2)
		}
		c.SecretKey = k
		c.GossipVerifyIncoming = *verifyIn
		c.GossipVerifyOutgoing = *verifyOut
	}

	m, err := memberlist.Create(c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mlagent: create: %v\n", err)
		os.Exit(1)
	}
	log.SetOutput(out)
	log.Printf("mlagent: %s on %s:%d encryption=%v verify_incoming=%v", *name, *bind, *port,
		*key != "", c.GossipVerifyIncoming)
	if *join != "" {
		if n, err := m.Join(strings.Split(*join, ",")); err != nil {
			log.Printf("mlagent: join: %d contacted, %v", n, err)
		}
	}

	write := func() {
		ms := []member{}
		for _, n := range m.Members() {
			ms = append(ms, member{n.Name, n.Addr.String(), n.Port, "alive"})
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
		b, _ := json.Marshal(map[string]interface{}{"members": ms})
		tmp := *membersFile + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err == nil {
			_ = os.Rename(tmp, *membersFile)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			write()
		case <-sig:
			_ = m.Leave(2 * time.Second)
			_ = m.Shutdown()
			os.Exit(0)
		}
	}
}
