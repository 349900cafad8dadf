// Command csi-proxy-go-client is an old-Go-client stand-in for test/integration/go-client.test.ts.
//
// It dials exactly as csi-proxy's generated Go clients (client/groups/<group>/<version>) do:
// grpc.Dial(<raw pipe path>, grpc.WithContextDialer(...), grpc.WithInsecure()), so with
// grpc-go < 1.57 (Debian 12 ships 1.33.3) the HTTP/2 `:authority` is the raw target string
// `\\.\pipe\csi-proxy-<group>-<version>`. The context dialer, which upstream points at the named
// pipe, opens the Unix socket given by -socket instead.
//
// It sends one unary call with the request bytes given in hex (-request) through a codec that
// passes []byte through, and prints one JSON line: the status code and message, the response bytes
// (hex), the address the dialer was handed, and the `:authority` of the first request as read back
// from the bytes the client wrote (decoded with HPACK).
//
// Builds offline against Debian's golang-google-grpc-dev in GOPATH mode:
//
//	GO111MODULE=off GOPATH=<tmp>:/usr/share/gocode GOCACHE=<tmp>/cache go build -o <out> .
package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// bytesCodec passes already-encoded protobuf messages through untouched.
type bytesCodec struct{}

func (bytesCodec) Marshal(v interface{}) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("bytesCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (bytesCodec) Unmarshal(data []byte, v interface{}) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bytesCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// "proto" keeps the content-type a real generated client sends (application/grpc).
func (bytesCodec) Name() string { return "proto" }

// recordingConn keeps a copy of everything the client writes.
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recordingConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.out.Bytes()...)
}

// firstAuthority decodes the client's first header block and returns its `:authority`.
func firstAuthority(written []byte) (string, error) {
	if !bytes.HasPrefix(written, []byte(http2.ClientPreface)) {
		return "", fmt.Errorf("no client preface")
	}
	fr := http2.NewFramer(io.Discard, bytes.NewReader(written[len(http2.ClientPreface):]))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return "", err
		}
		if mh, ok := f.(*http2.MetaHeadersFrame); ok {
			return mh.PseudoValue("authority"), nil
		}
	}
}

type result struct {
	Code      uint32 `json:"code"`
	Message   string `json:"message"`
	Response  string `json:"response"`
	DialAddr  string `json:"dialAddr"`
	Authority string `json:"authority"`
	Error     string `json:"error,omitempty"`
}

func main() {
	socket := flag.String("socket", "", "Unix socket the context dialer opens")
	target := flag.String("target", "", `dial target, e.g. \\.\pipe\csi-proxy-filesystem-v1`)
	method := flag.String("method", "", "full method, e.g. /v1.Filesystem/PathExists")
	request := flag.String("request", "", "request message bytes, hex")
	timeout := flag.Duration("timeout", 10*time.Second, "call timeout")
	flag.Parse()

	var res result
	fail := func(err error) {
		res.Error = err.Error()
		json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(1)
	}
	req, err := hex.DecodeString(*request)
	if err != nil {
		fail(err)
	}

	var conn *recordingConn
	var connMu sync.Mutex
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", *socket)
		if err != nil {
			return nil, err
		}
		rc := &recordingConn{Conn: c}
		connMu.Lock()
		res.DialAddr = addr
		conn = rc
		connMu.Unlock()
		return rc, nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cc, err := grpc.Dial(*target, grpc.WithContextDialer(dialer), grpc.WithInsecure())
	if err != nil {
		fail(err)
	}
	defer cc.Close()

	var reply []byte
	err = cc.Invoke(ctx, *method, &req, &reply, grpc.ForceCodec(bytesCodec{}))
	st := status.Convert(err)
	res.Code = uint32(st.Code())
	res.Message = st.Message()
	res.Response = hex.EncodeToString(reply)

	connMu.Lock()
	if conn != nil {
		if a, aerr := firstAuthority(conn.written()); aerr == nil {
			res.Authority = a
		} else {
			res.Error = "reading :authority back: " + aerr.Error()
		}
	}
	connMu.Unlock()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}
