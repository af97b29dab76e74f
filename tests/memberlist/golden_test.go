// Golden packets from a real HashiCorp memberlist (Debian's
// golang-github-hashicorp-memberlist-dev 0.2.2, the library serf 0.9.4 is
// built on), for dataplane/memberlist's inspect() tests. make-golden.sh
// copies this file into a scratch copy of the memberlist package (it calls
// the package's unexported encoders, the ones its agents send with) and runs
// it offline; the output is golden.txt beside it:
//
//   NAME KEY LABEL SOURCE PACKET
//
// KEY is the hex AES key the packet is sealed with ("-": plaintext), LABEL
// the label ("-": none), SOURCE the UDP source the test should present
// (ip:port), PACKET the UDP payload in hex. Nonces come from crypto/rand, so
// every run writes other bytes with the same meaning.
package memberlist

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// captureTransport records what memberlist writes to the network.
type captureTransport struct {
	mu      sync.Mutex
	packets [][]byte
	pch     chan *Packet
	sch     chan net.Conn
}

func (t *captureTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return net.IPv4(10, 0, 0, 2).To4(), 7946, nil
}
func (t *captureTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.packets = append(t.packets, append([]byte(nil), b...))
	return time.Now(), nil
}
func (t *captureTransport) PacketCh() <-chan *Packet { return t.pch }
func (t *captureTransport) DialTimeout(string, time.Duration) (net.Conn, error) {
	return nil, fmt.Errorf("no streams here")
}
func (t *captureTransport) StreamCh() <-chan net.Conn { return t.sch }
func (t *captureTransport) Shutdown() error         { return nil }
func (t *captureTransport) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.packets) == 0 {
		return nil
	}
	p := t.packets[len(t.packets)-1]
	t.packets = nil
	return p
}

var (
	key16 = []byte("0123456789abcdef")
	key24 = []byte("0123456789abcdef01234567")
	key32 = []byte("0123456789abcdef0123456789abcdef")
	src   = "10.0.0.2:7946"
)

type line struct{ name, key, label, source, pkt string }

func hexOr(b []byte) string {
	if b == nil {
		return "-"
	}
	return hex.EncodeToString(b)
}

// newAgent makes a memberlist that sends through a captureTransport, with
// one key (or none), compression on, at protocol version `pv`.
func newAgent(t *testing.T, key []byte, pv uint8, compress bool) (*Memberlist, *captureTransport) {
	tr := &captureTransport{pch: make(chan *Packet), sch: make(chan net.Conn)}
	c := DefaultLANConfig()
	c.Name = "node-a"
	c.Transport = tr
	c.SecretKey = key
	c.ProtocolVersion = pv
	c.EnableCompression = compress
	c.LogOutput = io.Discard
	c.ProbeInterval = time.Hour // no probes of our own while we capture
	c.GossipInterval = time.Hour
	c.PushPullInterval = 0
	m, err := Create(c)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// Gossip of other members waiting to be piggybacked: enough repetition
	// that compression pays off, as in a real cluster's alive broadcasts.
	for i := 0; i < 4; i++ {
		m.encodeAndBroadcast(fmt.Sprintf("node-%d", i), aliveMsg, &alive{Incarnation: uint32(i + 1),
			Node: fmt.Sprintf("node-%d", i), Addr: net.IPv4(10, 0, 1, byte(i)).To4(), Port: 7946,
			Meta: []byte("role=worker,zone=eu-west-1a"), Vsn: []uint8{1, 5, 2, 2, 5, 4}})
	}
	return m, tr
}

func must(t *testing.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

func encodeMsg(t *testing.T, ty messageType, v interface{}) []byte {
	b, err := encode(ty, v)
	must(t, err)
	return b.Bytes()
}

func seal(t *testing.T, vsn encryptionVersion, key, msg []byte, label string) []byte {
	var buf bytes.Buffer
	if label != "" {
		// memberlist >= 0.3 (label.go): 0xF4, length, label; the label is the
		// AES-GCM additional data. 0.2.2 has no labels: the header is written
		// here as the newer source writes it.
		buf.Write([]byte{244, byte(len(label))})
		buf.WriteString(label)
	}
	must(t, encryptPayload(vsn, key, msg, []byte(label), &buf))
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	var out []line
	add := func(name string, key []byte, label string, pkt []byte) {
		l := "-"
		if label != "" {
			l = label
		}
		out = append(out, line{name, hexOr(key), l, src, hex.EncodeToString(pkt)})
	}
	ping := ping{SeqNo: 7, Node: "node-b", SourceAddr: net.IPv4(10, 0, 0, 2).To4(), SourcePort: 7946, SourceNode: "node-a"}

	// The real send path: a ping through sendMsg piggybacks the agent's own
	// queued alive broadcast (compound), compresses, adds the CRC for a
	// protocol-5 peer and seals with the primary key (version 1 at protocol >= 2).
	for _, k := range []struct {
		name string
		key  []byte
	}{{"aes128", key16}, {"aes192", key24}, {"aes256", key32}} {
		m, tr := newAgent(t, k.key, 5, true)
		msg := encodeMsg(t, pingMsg, &ping)
		must(t, m.sendMsg(Address{Addr: "10.0.0.3:7946", Name: "node-b"}, msg))
		add("ping_compound_compressed_"+k.name, k.key, "", tr.take())
		// The same ping alone, with the CRC a protocol-5 peer gets.
		must(t, m.rawSendMsgPacket(Address{Addr: "10.0.0.3:7946", Name: "node-b"}, &Node{PMax: 5}, msg))
		add("ping_crc_"+k.name, k.key, "", tr.take())
		m.Shutdown()
	}
	// Protocol version 1 seals with encryption version 0 (PKCS7 padding).
	{
		m, tr := newAgent(t, key16, 1, false)
		must(t, m.rawSendMsgPacket(Address{Addr: "10.0.0.3:7946", Name: "node-b"}, nil, encodeMsg(t, pingMsg, &ping)))
		add("ping_vsn0_aes128", key16, "", tr.take())
		m.Shutdown()
	}
	// Plaintext cluster: the agent's send path with compression off, then on
	// (each with the queued alive broadcasts).
	for _, compress := range []bool{false, true} {
		m, tr := newAgent(t, nil, 5, compress)
		must(t, m.sendMsg(Address{Addr: "10.0.0.3:7946", Name: "node-b"}, encodeMsg(t, pingMsg, &ping)))
		add(fmt.Sprintf("plain_ping_compound_compress_%v", compress), nil, "", tr.take())
		m.Shutdown()
	}

	// Every other packet message type, sealed as version 1 with key16.
	msgs := []struct {
		name string
		ty   messageType
		v    interface{}
	}{
		{"indirect_ping", indirectPingMsg, &indirectPingReq{SeqNo: 9, Target: net.IPv4(10, 0, 0, 3).To4(), Port: 7946,
			Node: "node-c", Nack: true, SourceAddr: net.IPv4(10, 0, 0, 2).To4(), SourcePort: 7946, SourceNode: "node-a"}},
		{"ack", ackRespMsg, &ackResp{SeqNo: 7, Payload: []byte("coordinate")}},
		{"nack", nackRespMsg, &nackResp{SeqNo: 9}},
		{"suspect", suspectMsg, &suspect{Incarnation: 3, Node: "node-c", From: "node-a"}},
		{"alive", aliveMsg, &alive{Incarnation: 1, Node: "node-a", Addr: net.IPv4(10, 0, 0, 2).To4(), Port: 7946,
			Meta: []byte("role=db"), Vsn: []uint8{1, 5, 2, 2, 5, 4}}},
		{"dead", deadMsg, &dead{Incarnation: 4, Node: "node-c", From: "node-a"}},
	}
	for _, x := range msgs {
		add(x.name+"_aes128", key16, "", seal(t, 1, key16, encodeMsg(t, x.ty, x.v), ""))
	}
	user := append([]byte{byte(userMsg)}, []byte("\x04serf-user-event")...)
	add("user_aes128", key16, "", seal(t, 1, key16, user, ""))

	// Labels (memberlist >= 0.3 format).
	add("ping_label_aes256", key32, "dc1", seal(t, 1, key32, encodeMsg(t, pingMsg, &ping), "dc1"))

	// Attacks, in the clear: the three-entry Vsn alive and a 255-ping compound.
	crash := encodeMsg(t, aliveMsg, &alive{Incarnation: 1, Node: "phantom", Addr: net.IPv4(10, 9, 9, 9).To4(),
		Port: 7946, Vsn: []uint8{1, 5, 2}})
	add("crash_alive_vsn3_plain", nil, "", crash)
	var pings [][]byte
	for i := 0; i < 255; i++ {
		p := ping
		p.SeqNo = uint32(i)
		p.SourceAddr = net.IPv4(192, 0, 2, 1).To4() // the victim
		pings = append(pings, encodeMsg(t, pingMsg, &p))
	}
	add("ping255_compound_plain", nil, "", makeCompoundMessage(pings).Bytes())

	// Show that the crash packet crashes this memberlist (the handler runs on
	// its own goroutine in the agent, where the panic kills the process).
	{
		m, _ := newAgent(t, nil, 5, false)
		func() {
			defer func() {
				fmt.Fprintf(os.Stderr, "crash_alive_vsn3_plain on memberlist 0.2.2 handleAlive: panic: %v\n", recover())
			}()
			m.handleAlive(crash[1:], &net.UDPAddr{IP: net.IPv4(10, 9, 9, 9), Port: 7946})
		}()
		m.Shutdown()
	}

	sort.SliceStable(out, func(i, j int) bool { return false })
	var sb strings.Builder
	for _, l := range out {
		fmt.Fprintf(&sb, "%s %s %s %s %s\n", l.name, l.key, l.label, l.source, l.pkt)
	}
	path := os.Getenv("GOLDEN_OUT")
	if path == "" {
		fmt.Print(sb.String())
		return
	}
	must(t, os.WriteFile(path, []byte(sb.String()), 0o644))
}
