// Members' addresses as clients that read from the owners use them.
package ring

import "net"

// Routable reports whether a client can be sent to a member at addr
// (host:port): a member that listens on every interface and advertises
// no address of its own (0.0.0.0, ::, or none) cannot be reached there.
func Routable(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsUnspecified()
}
