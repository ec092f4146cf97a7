package nodeports

import v1 "k8s.io/api/core/v1"

// bindAllHostIP is the host IP an empty hostIP means: every address.
const bindAllHostIP = "0.0.0.0"

// protocolPort is one port of one protocol.
type protocolPort struct {
	protocol string
	port     int32
}

// hostPortInfo is the host ports in use on a node, by host IP.
type hostPortInfo map[string]map[protocolPort]struct{}

// add records that hostPort is taken on ip for protocol.
func (h hostPortInfo) add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitize(ip, protocol)
	pp := protocolPort{protocol: protocol, port: port}
	if h[ip] == nil {
		h[ip] = map[protocolPort]struct{}{}
	}
	h[ip][pp] = struct{}{}
}

// conflicts reports whether port on ip for protocol is taken: on the wildcard
// address any use of the port conflicts, on a specific address a use on the
// same address or on the wildcard does.
func (h hostPortInfo) conflicts(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	pp := protocolPort{protocol: protocol, port: port}
	if ip == bindAllHostIP {
		for _, ports := range h {
			if _, ok := ports[pp]; ok {
				return true
			}
		}
		return false
	}
	for _, key := range []string{bindAllHostIP, ip} {
		if _, ok := h[key][pp]; ok {
			return true
		}
	}
	return false
}

// sanitize fills in the API defaults: every address and TCP.
func sanitize(ip, protocol string) (string, string) {
	if ip == "" {
		ip = bindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// hostPorts returns the container ports of pod that ask for a host port,
// from its containers and its restartable (sidecar) init containers.
func hostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		ports = appendHostPorts(ports, c.Ports)
	}
	for i := range pod.Spec.Containers {
		ports = appendHostPorts(ports, pod.Spec.Containers[i].Ports)
	}
	return ports
}

func appendHostPorts(dst, ports []v1.ContainerPort) []v1.ContainerPort {
	for _, p := range ports {
		if p.HostPort > 0 {
			dst = append(dst, p)
		}
	}
	return dst
}
