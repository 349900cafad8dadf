//go:build !windows

package main

import (
	"context"
	"net"
)

func dialAddr(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", addr)
}

// pipeAccepts reports whether a server accepts on the Unix socket addr.
func pipeAccepts(addr string) bool {
	c, err := net.Dial("unix", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
