package main

// Named-pipe dialing for the Windows build (run under Wine by bench/windows.ts): Go 1.19's standard
// library cannot open a pipe as a net.Conn, and a synchronous pipe handle serialises a pending read
// with every write on it, so the handle is opened with FILE_FLAG_OVERLAPPED and each Read/Write
// waits on its own event. One read and one write may be in flight at once (grpc-go's reader and
// writer goroutines); each blocks one OS thread while it waits.

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

var (
	kernel32                = syscall.NewLazyDLL("kernel32.dll")
	procCreateEventW        = kernel32.NewProc("CreateEventW")
	procGetOverlappedResult = kernel32.NewProc("GetOverlappedResult")
)

const (
	fileFlagOverlapped = 0x40000000
	errorPipeBusy      = syscall.Errno(231)
	errorNoData        = syscall.Errno(232)
	errorPipeNotConn   = syscall.Errno(233)
)

func isPipe(addr string) bool { return strings.HasPrefix(addr, `\\.\pipe\`) }

func dialAddr(ctx context.Context, addr string) (net.Conn, error) {
	if !isPipe(addr) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", addr)
	}
	for {
		h, err := openPipe(addr)
		if err == nil {
			return newPipeConn(h, addr)
		}
		if err != errorPipeBusy {
			return nil, &net.OpError{Op: "dial", Net: "pipe", Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// openPipe opens one client handle; ERROR_FILE_NOT_FOUND while nobody listens, ERROR_PIPE_BUSY while
// every instance is taken.
func openPipe(addr string) (syscall.Handle, error) {
	name, err := syscall.UTF16PtrFromString(addr)
	if err != nil {
		return syscall.InvalidHandle, err
	}
	return syscall.CreateFile(name, syscall.GENERIC_READ|syscall.GENERIC_WRITE, 0, nil, syscall.OPEN_EXISTING, fileFlagOverlapped, 0)
}

// pipeAccepts reports whether a server listens on addr (a busy pipe counts: it exists).
func pipeAccepts(addr string) bool {
	h, err := openPipe(addr)
	if err == nil {
		syscall.CloseHandle(h)
		return true
	}
	return err == errorPipeBusy
}

type pipeConn struct {
	h        syscall.Handle
	addr     string
	rmu, wmu sync.Mutex
	rev, wev syscall.Handle
	once     sync.Once
}

func newEvent() (syscall.Handle, error) {
	r, _, err := procCreateEventW.Call(0, 1, 0, 0)
	if r == 0 {
		return 0, err
	}
	return syscall.Handle(r), nil
}

func newPipeConn(h syscall.Handle, addr string) (*pipeConn, error) {
	rev, err := newEvent()
	if err != nil {
		syscall.CloseHandle(h)
		return nil, err
	}
	wev, err := newEvent()
	if err != nil {
		syscall.CloseHandle(h)
		syscall.CloseHandle(rev)
		return nil, err
	}
	return &pipeConn{h: h, addr: addr, rev: rev, wev: wev}, nil
}

// io runs one overlapped ReadFile/WriteFile and waits for it.
func (c *pipeConn) io(read bool, b []byte, ev syscall.Handle) (int, error) {
	var o syscall.Overlapped
	o.HEvent = ev
	var n uint32
	var err error
	if read {
		err = syscall.ReadFile(c.h, b, &n, &o)
	} else {
		err = syscall.WriteFile(c.h, b, &n, &o)
	}
	if err == syscall.ERROR_IO_PENDING {
		r, _, e := procGetOverlappedResult.Call(uintptr(c.h), uintptr(unsafe.Pointer(&o)), uintptr(unsafe.Pointer(&n)), 1)
		if r == 0 {
			err = e
		} else {
			err = nil
		}
	}
	return int(n), err
}

func (c *pipeConn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	n, err := c.io(true, b, c.rev)
	if err != nil {
		if errors.Is(err, syscall.ERROR_BROKEN_PIPE) || errors.Is(err, errorPipeNotConn) {
			return n, io.EOF
		}
		return n, &net.OpError{Op: "read", Net: "pipe", Err: err}
	}
	return n, nil
}

func (c *pipeConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	done := 0
	for done < len(b) {
		n, err := c.io(false, b[done:], c.wev)
		done += n
		if err != nil {
			return done, &net.OpError{Op: "write", Net: "pipe", Err: err}
		}
	}
	return done, nil
}

func (c *pipeConn) Close() error {
	c.once.Do(func() {
		syscall.CancelIoEx(c.h, nil)
		syscall.CloseHandle(c.h)
	})
	return nil
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

func (c *pipeConn) LocalAddr() net.Addr                { return pipeAddr(c.addr) }
func (c *pipeConn) RemoteAddr() net.Addr               { return pipeAddr(c.addr) }
func (c *pipeConn) SetDeadline(t time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return nil }
