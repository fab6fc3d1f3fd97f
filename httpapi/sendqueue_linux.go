package httpapi

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendQueue returns the bytes of a TCP connection's send queue not yet
// taken by its peer (sent or not).
func sendQueue(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioErr error
	if err := raw.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil {
		return 0, err
	}
	return n, ioErr
}
