// Command csi-proxy-bench is the grpc-go side of `npm run bench` (bench/path-exists.ts):
//
//	csi-proxy-bench server -socket S -kubelet DIR
//	    a grpc-go server answering /v1.Filesystem/PathExists on the Unix socket S with the same work
//	    as csi-proxy: the path must be absolute (no NUL, at most 4096 bytes), is cleaned, its parent's
//	    symlinks are resolved and the result must lie within DIR on a directory boundary
//	    (PermissionDenied otherwise); then one lstat. Prints "ready" on stderr once listening.
//	csi-proxy-bench load -socket S -path P -calls N -warmup W -concurrency C [-authority A]
//	    one HTTP/2 connection, C goroutines issuing unary PathExists(P) calls until N have been
//	    measured after W warm-up calls; prints one JSON line: rps, p50_us, p99_us, errors.
//	csi-proxy-bench wait -timeout D ADDR...
//	    prints "waiting", then polls every ADDR (Unix socket, or \\.\pipe\ name in the Windows build)
//	    every millisecond until each has accepted once; prints one JSON line: unix_ms (wall clock, ms,
//	    when the last one accepted), missing (those that never did within D).
//
// The Windows build (GOOS=windows, run under Wine by bench/windows.ts) dials named pipes with
// overlapped I/O (dial_windows.go).
//
// Both speak protobuf bytes encoded by hand (PathExistsRequest{1: string path},
// PathExistsResponse{1: bool exists}) through a pass-through codec, because Debian's grpc-go 1.33
// predates the generated-message API of today's protoc-gen-go. Builds offline in GOPATH mode:
//
//	GO111MODULE=off GOPATH=<tmp>:/usr/share/gocode go build -o <out> .
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const method = "/v1.Filesystem/PathExists"

// bytesCodec passes already-encoded protobuf messages through untouched.
type bytesCodec struct{}

func (bytesCodec) Marshal(v interface{}) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return nil, fmt.Errorf("bytesCodec: cannot marshal %T", v)
}

func (bytesCodec) Unmarshal(data []byte, v interface{}) error {
	if b, ok := v.(*[]byte); ok {
		*b = append((*b)[:0], data...)
		return nil
	}
	return fmt.Errorf("bytesCodec: cannot unmarshal into %T", v)
}

func (bytesCodec) Name() string   { return "proto" }
func (bytesCodec) String() string { return "proto" }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: csi-proxy-bench server|load|wait [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		serve(os.Args[2:])
	case "load":
		load(os.Args[2:])
	case "wait":
		wait(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: csi-proxy-bench server|load|wait [flags]")
		os.Exit(2)
	}
}

// --- server ---

// decodePath reads field 1 (string) of a PathExistsRequest.
func decodePath(b []byte) (string, error) {
	path := ""
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return "", errors.New("bad tag")
		}
		b = b[n:]
		switch key & 7 {
		case 0:
			_, n = uvarint(b)
			if n <= 0 {
				return "", errors.New("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return "", errors.New("bad length")
			}
			if key>>3 == 1 {
				path = string(b[n : n+int(l)])
			}
			b = b[n+int(l):]
		case 1:
			b = b[8:]
		case 5:
			b = b[4:]
		default:
			return "", errors.New("bad wire type")
		}
	}
	return path, nil
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

type fsServer struct{ allowed string }

func (s *fsServer) check(p string) (string, error) {
	if p == "" {
		return "", status.Error(codes.InvalidArgument, "path must not be empty")
	}
	if len(p) > 4096 {
		return "", status.Errorf(codes.InvalidArgument, "path length %d exceeds maximum bytes: 4096", len(p))
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", status.Error(codes.InvalidArgument, "path contains a NUL byte")
	}
	if !filepath.IsAbs(p) {
		return "", status.Errorf(codes.InvalidArgument, "not an absolute path: %s", p)
	}
	clean := filepath.Clean(p)
	if !within(clean, s.allowed) {
		return "", status.Errorf(codes.PermissionDenied, "path %s is not within the allowed directories [%s]", p, s.allowed)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(clean))
	if err != nil {
		if os.IsNotExist(err) {
			return clean, nil
		}
		return "", status.Error(codes.Internal, err.Error())
	}
	resolved := filepath.Join(parent, filepath.Base(clean))
	if !within(resolved, s.allowed) {
		return "", status.Errorf(codes.PermissionDenied, "path %s is not within the allowed directories [%s] (resolved to %s)", p, s.allowed, resolved)
	}
	return resolved, nil
}

func within(child, parent string) bool {
	return child == parent || strings.HasPrefix(child, strings.TrimSuffix(parent, "/")+"/")
}

func (s *fsServer) pathExists(req []byte) ([]byte, error) {
	p, err := decodePath(req)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	checked, err := s.check(p)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(checked); err != nil {
		if os.IsNotExist(err) || errors.Is(err, os.ErrNotExist) {
			return []byte{}, nil
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	return []byte{0x08, 0x01}, nil
}

func serve(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	socket := fs.String("socket", "", "Unix socket to listen on")
	kubelet := fs.String("kubelet", "", "allowed directory")
	fs.Parse(args)
	allowed, err := filepath.EvalSymlinks(*kubelet)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	impl := &fsServer{allowed: allowed}
	os.Remove(*socket)
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := grpc.NewServer(grpc.CustomCodec(bytesCodec{}))
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "v1.Filesystem",
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "PathExists",
			Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
				var req []byte
				if err := dec(&req); err != nil {
					return nil, err
				}
				out, err := impl.pathExists(req)
				if err != nil {
					return nil, err
				}
				return &out, nil
			},
		}},
	}, struct{}{})
	fmt.Fprintln(os.Stderr, "ready")
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// --- load client ---

type result struct {
	Calls       int     `json:"calls"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_us"`
	P99         float64 `json:"p99_us"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	Client      string  `json:"client"`
}

func load(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	socket := fs.String("socket", "", `Unix socket (or, in the Windows build, \\.\pipe\ name) to dial`)
	path := fs.String("path", "/", "path sent in every PathExists request")
	calls := fs.Int("calls", 20000, "measured calls")
	warmup := fs.Int("warmup", 500, "warm-up calls (not measured)")
	concurrency := fs.Int("concurrency", 1, "concurrent callers on the one connection")
	authority := fs.String("authority", `%5C%5C.%5Cpipe%5Ccsi-proxy-filesystem-v1`, ":authority sent (default: what grpc-go >= 1.57 sends for the pipe)")
	fs.Parse(args)

	dialer := func(ctx context.Context, _ string) (net.Conn, error) { return dialAddr(ctx, *socket) }
	cc, err := grpc.Dial("passthrough:///csi-proxy", grpc.WithContextDialer(dialer), grpc.WithInsecure(),
		grpc.WithAuthority(*authority), grpc.WithBlock(), grpc.WithTimeout(10*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cc.Close()

	p := []byte(*path)
	req := append([]byte{0x0a}, encodeVarint(uint64(len(p)))...)
	req = append(req, p...)

	var errs int64
	var firstErr atomic.Value
	call := func() {
		var reply []byte
		r := req
		if err := cc.Invoke(context.Background(), method, &r, &reply, grpc.ForceCodec(bytesCodec{})); err != nil {
			if atomic.AddInt64(&errs, 1) == 1 {
				firstErr.Store(err.Error())
			}
		}
	}
	run := func(n int, lat []time.Duration) time.Duration {
		var next int64 = -1
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := 0; w < *concurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := atomic.AddInt64(&next, 1)
					if i >= int64(n) {
						return
					}
					s := time.Now()
					call()
					if lat != nil {
						lat[i] = time.Since(s)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	run(*warmup, nil)
	errs = 0
	firstErr = atomic.Value{}
	lat := make([]time.Duration, *calls)
	elapsed := run(*calls, lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	res := result{Calls: *calls, Concurrency: *concurrency, Seconds: elapsed.Seconds(), RPS: float64(*calls) / elapsed.Seconds(),
		P50: pct(0.50), P99: pct(0.99), Errors: errs, Client: "grpc-go " + grpc.Version}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

// --- wait ---

func wait(args []string) {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	fs.Parse(args)
	pending := map[string]bool{}
	for _, a := range fs.Args() {
		pending[a] = true
	}
	fmt.Println("waiting")
	deadline := time.Now().Add(*timeout)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for a := range pending {
			if pipeAccepts(a) {
				delete(pending, a)
			}
		}
		if len(pending) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	missing := []string{}
	for a := range pending {
		missing = append(missing, a)
	}
	sort.Strings(missing)
	json.NewEncoder(os.Stdout).Encode(struct {
		UnixMs  float64  `json:"unix_ms"`
		Missing []string `json:"missing"`
	}{float64(time.Now().UnixNano()) / 1e6, missing})
}

func encodeVarint(v uint64) []byte {
	var out []byte
	for v >= 0x80 {
		out = append(out, byte(v)|0x80)
		v >>= 7
	}
	return append(out, byte(v))
}
