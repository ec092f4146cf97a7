package node

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// masterServices are the Services of the default namespace whose
// variables every pod gets, whatever its enableServiceLinks, as kubelet's
// masterServices.
var masterServices = map[string]bool{"kubernetes": true}

// podServiceEnv is the service environment of a pod, as kubelet's
// getServiceEnvVarMap builds it from its Service cache: the variables of
// every Service with a ClusterIP in the pod's namespace when
// enableServiceLinks (the default), and of the master Services of the
// default namespace always. An agent without a Service cache gives none.
func (a *Agent) podServiceEnv(pod *corev1.Pod) (map[string]string, error) {
	if a.serviceLister == nil {
		return map[string]string{}, nil
	}
	services, err := a.serviceLister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	links := ptr.Deref(pod.Spec.EnableServiceLinks, corev1.DefaultEnableServiceLinks)
	return serviceEnvMap(services, pod.Namespace, links), nil
}

// serviceEnvMap projects the Services of namespace (when links) onto the
// master Services and returns their variables by name. A Service of the
// pod's namespace takes the place of a master Service of the same name.
func serviceEnvMap(services []*corev1.Service, namespace string, links bool) map[string]string {
	byName := map[string]*corev1.Service{}
	for _, svc := range services {
		if !serviceIPSet(svc) {
			continue
		}
		switch {
		case svc.Namespace == metav1.NamespaceDefault && masterServices[svc.Name]:
			if _, ok := byName[svc.Name]; !ok {
				byName[svc.Name] = svc
			}
		case svc.Namespace == namespace && links:
			byName[svc.Name] = svc
		}
	}
	picked := make([]*corev1.Service, 0, len(byName))
	for _, svc := range byName {
		picked = append(picked, svc)
	}
	env := map[string]string{}
	for _, e := range serviceEnvVars(picked) {
		env[e.Name] = e.Value
	}
	return env
}

// serviceIPSet reports whether a Service has a ClusterIP (neither None
// nor empty: headless and ExternalName Services have none).
func serviceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// serviceEnvVars are the variables of services in kubelet's order
// (envvars.FromServices): per Service <NAME>_SERVICE_HOST,
// <NAME>_SERVICE_PORT (the first port), <NAME>_SERVICE_PORT_<PORTNAME> for
// named ports, then the Docker link variables. Services without a
// ClusterIP or without ports (which validation does not let through) give
// none.
func serviceEnvVars(services []*corev1.Service) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, svc := range services {
		if !serviceIPSet(svc) || len(svc.Spec.Ports) == 0 {
			continue
		}
		prefix := envVarName(svc.Name)
		env = append(env,
			corev1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: svc.Spec.ClusterIP},
			corev1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))})
		for _, sp := range svc.Spec.Ports {
			if sp.Name != "" {
				env = append(env, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + envVarName(sp.Name), Value: strconv.Itoa(int(sp.Port))})
			}
		}
		env = append(env, linkEnvVars(prefix, svc)...)
	}
	return env
}

// linkEnvVars are a Service's Docker link variables: <NAME>_PORT for its
// first port, then <NAME>_PORT_<port>_<PROTO> with _PROTO, _PORT and _ADDR
// for each port.
func linkEnvVars(prefix string, svc *corev1.Service) []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, sp := range svc.Spec.Ports {
		protocol := string(corev1.ProtocolTCP)
		if sp.Protocol != "" {
			protocol = string(sp.Protocol)
		}
		port := strconv.Itoa(int(sp.Port))
		url := strings.ToLower(protocol) + "://" + net.JoinHostPort(svc.Spec.ClusterIP, port)
		if i == 0 {
			env = append(env, corev1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		portPrefix := prefix + "_PORT_" + port + "_" + strings.ToUpper(protocol)
		env = append(env,
			corev1.EnvVar{Name: portPrefix, Value: url},
			corev1.EnvVar{Name: portPrefix + "_PROTO", Value: strings.ToLower(protocol)},
			corev1.EnvVar{Name: portPrefix + "_PORT", Value: port},
			corev1.EnvVar{Name: portPrefix + "_ADDR", Value: svc.Spec.ClusterIP})
	}
	return env
}

// envVarName is a Service or port name as a variable name: upper case,
// '-' as '_'.
func envVarName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
