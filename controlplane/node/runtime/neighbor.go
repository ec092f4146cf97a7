package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// neighborTimeout bounds the wait for the kernel's answer to the netlink
// request of forgetNeighbor.
const neighborTimeout = 5 * time.Second

// forgetNeighbor deletes the host's neighbor (ARP) entry for ip on the
// device named dev, as `ip neigh del <ip> dev <dev>` does, over one
// rtnetlink request. An entry that is not there is not an error.
//
// A pod that gets the address of an earlier pod would otherwise be
// unreachable from the node until the entry with the earlier pod's MAC
// fails its probes, 8 to 11 seconds after the first packet: the kernel
// keeps stale entries while the table is small (gc_thresh1), and the new
// pod's gratuitous ARP can go out before its bridge port forwards
// (containernetworking/plugins#858).
func forgetNeighbor(dev string, ip net.IP) error {
	family, addr := unix.AF_INET6, ip.To16()
	if ip4 := ip.To4(); ip4 != nil {
		family, addr = unix.AF_INET, ip4
	}
	if addr == nil {
		return fmt.Errorf("failed to delete neighbor %q on %q: not an IP address", ip, dev)
	}
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		return fmt.Errorf("failed to delete neighbor %s on %q: %w", ip, dev, err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("failed to open a netlink socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(neighborTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("failed to set the netlink socket's timeout: %w", err)
	}
	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	if err := unix.Sendto(fd, delNeighMessage(family, ifc.Index, addr), 0, kernel); err != nil {
		return fmt.Errorf("failed to delete neighbor %s on %q: %w", ip, dev, err)
	}
	buf := make([]byte, unix.Getpagesize())
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("failed to delete neighbor %s on %q: no answer from the kernel: %w", ip, dev, err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return fmt.Errorf("failed to delete neighbor %s on %q: %w", ip, dev, err)
	}
	for _, m := range msgs {
		if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
			continue
		}
		// The acknowledgement: a negated errno, 0 for success.
		switch errno := syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))); {
		case errno == 0, errors.Is(errno, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("failed to delete neighbor %s on %q: %w", ip, dev, errno)
		}
	}
	return fmt.Errorf("failed to delete neighbor %s on %q: the kernel did not acknowledge", ip, dev)
}

// delNeighMessage is the RTM_DELNEIGH request for addr (4 or 16 bytes, of
// family) on the interface with index ifindex, asking for an
// acknowledgement.
func delNeighMessage(family, ifindex int, addr []byte) []byte {
	attrLen := unix.SizeofRtAttr + len(addr) // 8 or 20: already 4-byte aligned
	var b bytes.Buffer
	// Writes to a bytes.Buffer do not fail.
	_ = binary.Write(&b, binary.NativeEndian, unix.NlMsghdr{
		Len:   uint32(unix.SizeofNlMsghdr + unix.SizeofNdMsg + attrLen),
		Type:  unix.RTM_DELNEIGH,
		Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK,
		Seq:   1,
	})
	_ = binary.Write(&b, binary.NativeEndian, unix.NdMsg{Family: uint8(family), Ifindex: int32(ifindex)})
	_ = binary.Write(&b, binary.NativeEndian, unix.RtAttr{Len: uint16(attrLen), Type: unix.NDA_DST})
	b.Write(addr)
	return b.Bytes()
}
