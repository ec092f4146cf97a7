package demo

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ClusterDomain is the cluster DNS domain the service-dns demo resolves
// names in.
const ClusterDomain = "cluster.local"

// runtimeLabel names a node's runtime; a containerd node has a data path
// (pod network, service proxy, cluster DNS), a simulated one does not.
const (
	runtimeLabel = "node.glassplane.io/runtime"
	realRuntime  = "containerd"
)

// demoHTTPPort is the port the demo image's httpd listens on.
const demoHTTPPort = 8080

// probesAfterKill is how many replies in a row from the surviving replica
// show the traffic moved.
const probesAfterKill = 3

// ReasonServiceReached is the reason of the Event the service-dns demo
// records on its client pod for each probe that got a reply: the client
// looked the Service's name up through cluster DNS and connected, and a
// replica answered. Kubernetes has no Event for this (the connection goes
// through the kernel's rules, not a component); it is the demo's own
// report, which the dashboard's map plays as the DNS lookup, its answer
// and the connection.
const ReasonServiceReached = "ServiceReached"

// EventSource is the component the demos' Events name as their reporter
// (source.component and reportingComponent).
const EventSource = "glassplane-demo"

// serviceDNS is the service-dns demo: two replicas of the demo image's
// httpd behind a Service, found by a client through cluster DNS; one
// replica killed, the traffic moves to the other. Without a containerd
// node it shows the Service and its endpoints only.
func serviceDNS() Demo {
	const svcName, client = "hello", "client"
	replicas := []string{"hello-1", "hello-2"}
	uids := map[string]types.UID{}
	var real bool
	var clusterIP string
	var reached *replyRecorder
	lastProbe := 0
	return Demo{
		Name:  "service-dns",
		Title: Text{"A Service found by its DNS name, and traffic moving when a replica dies", "DNS 이름으로 찾는 Service, 복제본이 죽으면 옮겨 가는 트래픽"},
		Steps: []Step{
			{Say: Text{
				"Two replicas of a small web server (busybox httpd answering with its pod's hostname), two pods with the label app=hello, as a ReplicaSet would make. Traffic needs a data path (pod network, service proxy, cluster DNS), which only real (containerd) nodes have; on a cluster of simulated nodes the demo shows the Service and its endpoints only.",
				"작은 웹 서버(자기 pod의 hostname으로 응답하는 busybox httpd) 복제본 두 개를 띄웁니다. ReplicaSet이 만드는 것처럼 app=hello 레이블을 단 pod 두 개입니다. 트래픽이 흐르려면 데이터 경로(pod 네트워크, 서비스 프록시, 클러스터 DNS)가 필요한데, 이는 실제 노드(containerd)에만 있습니다. 시뮬레이션 노드만 있는 클러스터에서는 Service와 엔드포인트까지만 보여 줍니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var err error
				if real, err = hasRealNode(ctx, env); err != nil {
					return Text{}, err
				}
				var nodes []string
				for _, name := range replicas {
					p := &corev1.Pod{ObjectMeta: meta(env, name, "service-dns"), Spec: corev1.PodSpec{Containers: []corev1.Container{container("httpd")}}}
					p.Labels["app"] = svcName
					p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: demoHTTPPort}}
					if real {
						p.Spec.NodeSelector = map[string]string{runtimeLabel: realRuntime}
					}
					got, err := env.createPod(ctx, p)
					if err != nil {
						return Text{}, err
					}
					uids[name] = got.UID
				}
				for _, name := range replicas {
					p, err := waitPhase(ctx, env, name, corev1.PodRunning)
					if err != nil {
						return Text{}, err
					}
					nodes = append(nodes, fmt.Sprintf("%s → %s (%s)", name, p.Spec.NodeName, p.Status.PodIP))
				}
				if !real {
					return textf("pods Running: %s. Every node is simulated: the data path needs a real (containerd) node, so this run shows the Service and its endpoints only.",
						"Pod가 실행 중입니다(Running): %s. 모든 노드가 시뮬레이션 노드라 데이터 경로가 없습니다. 데이터 경로에는 실제(containerd) 노드가 필요하므로, 이번 실행은 Service와 엔드포인트까지만 보여 줍니다.",
						strings.Join(nodes, ", ")), nil
				}
				return textf("pods Running on real nodes: %s", "실제 노드에서 Pod가 실행 중입니다(Running): %s", strings.Join(nodes, ", ")), nil
			}},
			{Say: Text{
				"kubectl expose pod hello-1 --name hello --port 80 --target-port 8080 --selector app=hello: a Service. The API server gives it a cluster IP from the service CIDR; the Service selects pods by label, not by name.",
				"kubectl expose pod hello-1 --name hello --port 80 --target-port 8080 --selector app=hello: Service를 만듭니다. API 서버가 서비스 CIDR에서 클러스터 IP를 하나 할당합니다. Service는 pod를 이름이 아니라 레이블로 고릅니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				svc := &corev1.Service{ObjectMeta: meta(env, svcName, "service-dns"), Spec: corev1.ServiceSpec{
					Type:     corev1.ServiceTypeClusterIP,
					Selector: map[string]string{"app": svcName},
					Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(demoHTTPPort)}},
				}}
				services := env.Client.CoreV1().Services(env.Namespace)
				got, err := services.Create(ctx, svc, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("service", got, services.Delete, metav1.DeleteOptions{})
				clusterIP = got.Spec.ClusterIP
				return textf("service/%s created: type %s, clusterIP %s, port 80/TCP → targetPort %d, selector app=%s",
					"Service를 만들었습니다: service/%s, type %s, clusterIP %s, port 80/TCP → targetPort %d, selector app=%s",
					svcName, got.Spec.Type, clusterIP, demoHTTPPort, svcName), nil
			}},
			{Say: Text{
				"The EndpointSlice controller watches Services and pods. It writes an EndpointSlice labelled kubernetes.io/service-name=hello listing each selected pod's IP with its conditions (ready, serving, terminating). Every node's service proxy watches EndpointSlices and programs its rules from them.",
				"EndpointSlice 컨트롤러는 Service와 pod를 watch 합니다. kubernetes.io/service-name=hello 레이블을 단 EndpointSlice에 선택된 pod의 IP와 상태(ready, serving, terminating)를 기록합니다. 각 노드의 서비스 프록시는 EndpointSlice를 watch 하고 이를 바탕으로 규칙을 설정합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				eps, err := waitEndpoints(ctx, env, svcName, func(ready map[string]string) bool { return len(ready) == len(replicas) })
				if err != nil {
					return Text{}, err
				}
				return textf("EndpointSlice of service/%s: ready endpoints %s", "service/%s의 EndpointSlice, Ready 엔드포인트: %s", svcName, eps), nil
			}},
			{Say: Text{
				"A client pod finds the Service by name: its resolv.conf points at cluster DNS (the kube-dns Service, 10.96.0.10) with the search path <namespace>.svc.cluster.local, so hello.<namespace>.svc.cluster.local resolves to the cluster IP. It then connects to port 80, and the node's service proxy sends the connection to one of the ready pods. The demo records each reply it reads in the client's log as a ServiceReached Event on the client pod (Kubernetes has no Event for this), which the cluster map plays: the lookup, cluster DNS's answer, the connection.",
				"클라이언트 pod가 이름으로 Service를 찾습니다. pod의 resolv.conf는 클러스터 DNS(kube-dns Service, 10.96.0.10)를 가리키고 검색 경로에 <namespace>.svc.cluster.local이 있어서, hello.<namespace>.svc.cluster.local은 클러스터 IP로 풀립니다. 그다음 80번 포트로 연결하면 노드의 서비스 프록시가 Ready 상태인 pod 중 하나로 연결을 보냅니다. 데모는 클라이언트 로그에서 읽은 응답마다 클라이언트 pod에 ServiceReached 이벤트를 기록하고(Kubernetes에는 이런 이벤트가 없습니다), 클러스터 맵은 이를 DNS 조회, 클러스터 DNS의 응답, 연결 순서로 보여 줍니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				fqdn := svcName + "." + env.Namespace + ".svc." + ClusterDomain
				if !real {
					return textf("no real node: %s would resolve to %s (an A record), but no traffic flows on simulated nodes",
						"실제 노드가 없습니다: %s은(는) %s(A 레코드)로 풀리겠지만, 시뮬레이션 노드에서는 트래픽이 흐르지 않습니다", fqdn, clusterIP), nil
				}
				p := &corev1.Pod{ObjectMeta: meta(env, client, "service-dns"), Spec: corev1.PodSpec{
					Containers:   []corev1.Container{container("client")},
					NodeSelector: map[string]string{runtimeLabel: realRuntime},
				}}
				p.Spec.Containers[0].Command = []string{"sh", "-c", probeScript(fqdn)}
				created, err := env.createPod(ctx, p)
				if err != nil {
					return Text{}, err
				}
				reached = newReplyRecorder(created, fqdn, uids)
				var got probe
				err = until(ctx, env, textf("a reply to the client from service %s", "클라이언트가 service %s로부터 응답 받기", svcName), func(ctx context.Context) (bool, error) {
					probes, err := readProbes(ctx, env, client)
					if err != nil {
						return false, nil
					}
					i := slices.IndexFunc(probes, func(p probe) bool { return p.replica != "" })
					if i < 0 {
						return false, nil
					}
					got = probes[i]
					return true, nil
				})
				if err != nil {
					return Text{}, err
				}
				if err := reached.record(ctx, env, got); err != nil {
					return Text{}, err
				}
				return textf("client: nslookup %s → %s; wget http://%s/ → answered by pod %s",
					"client: nslookup %s → %s, wget http://%s/ → pod %s가 응답했습니다", fqdn, got.lookup, fqdn, got.replica), nil
			}},
			{Say: Text{
				"Kill one replica: kubectl delete pod hello-1. Its endpoint turns terminating (not ready), then leaves the EndpointSlice; the service proxy reprograms the node (an EndpointsProgrammed Event on the Service), and the client's next connections all reach hello-2. The name and the cluster IP did not change.",
				"복제본 하나를 죽입니다: kubectl delete pod hello-1. 해당 엔드포인트가 terminating(Ready 아님)이 되었다가 EndpointSlice에서 빠집니다. 서비스 프록시가 노드의 규칙을 다시 설정하고(Service의 EndpointsProgrammed 이벤트), 클라이언트의 다음 연결은 모두 hello-2로 갑니다. 이름과 클러스터 IP는 그대로입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				killed, survivor := replicas[0], replicas[1]
				if real {
					probes, err := readProbes(ctx, env, client)
					if err != nil {
						return Text{}, err
					}
					if len(probes) > 0 {
						lastProbe = probes[len(probes)-1].n
					}
				}
				uid := uids[killed]
				if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, killed, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
					return Text{}, err
				}
				eps, err := waitEndpoints(ctx, env, svcName, func(ready map[string]string) bool {
					_, left := ready[killed]
					return !left && len(ready) == 1
				})
				if err != nil {
					return Text{}, err
				}
				if !real {
					return textf("pod/%s deleted; EndpointSlice of service/%s: ready endpoints %s. On a real node, the proxy would now send every connection to %s.",
						"pod/%s를 삭제했습니다. service/%s의 EndpointSlice, Ready 엔드포인트: %s. 실제 노드라면 이제 프록시가 모든 연결을 %s로 보냅니다.",
						killed, svcName, eps, survivor), nil
				}
				var replies []string
				err = until(ctx, env, textf("%d replies in a row from %s", "%d번 연속으로 %s의 응답 받기", probesAfterKill, survivor), func(ctx context.Context) (bool, error) {
					probes, err := readProbes(ctx, env, client)
					if err != nil {
						return false, nil
					}
					replies = replies[:0]
					for _, p := range probes {
						if p.n <= lastProbe {
							continue
						}
						if err := reached.record(ctx, env, p); err != nil {
							return false, err
						}
						if p.replica != survivor {
							replies = replies[:0]
							continue
						}
						replies = append(replies, "#"+strconv.Itoa(p.n)+" "+p.replica)
					}
					return len(replies) >= probesAfterKill, nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s deleted; ready endpoints %s; the client's connections since: %s",
					"pod/%s를 삭제했습니다. Ready 엔드포인트: %s. 그 뒤 클라이언트의 연결: %s",
					killed, eps, strings.Join(replies, ", ")), nil
			}},
		},
	}
}

// replyRecorder records a ServiceReached Event on the service-dns demo's
// client pod for each probe that got a reply, through the API as the
// demo's user, each probe at most once; the run's cleanup deletes them.
type replyRecorder struct {
	client *corev1.Pod
	fqdn   string
	// replicas are the uids of the pods that may answer, by name.
	replicas map[string]types.UID
	recorded map[int]bool
}

func newReplyRecorder(client *corev1.Pod, fqdn string, replicas map[string]types.UID) *replyRecorder {
	return &replyRecorder{client: client, fqdn: fqdn, replicas: replicas, recorded: map[int]bool{}}
}

// record records p, unless it got no reply or is recorded already: an
// Event about the client whose related object is the replica that
// answered.
func (r *replyRecorder) record(ctx context.Context, env *Env, p probe) error {
	if p.replica == "" || r.recorded[p.n] {
		return nil
	}
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: meta(env, r.client.Name+".probe-"+strconv.Itoa(p.n), "service-dns"),
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: r.client.Namespace, Name: r.client.Name, UID: r.client.UID,
		},
		Related: &corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: r.client.Namespace, Name: p.replica, UID: r.replicas[p.replica],
		},
		Reason:              ReasonServiceReached,
		Message:             ServiceReachedMessage(r.fqdn, p.lookup, p.replica),
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: EventSource},
		ReportingController: EventSource,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	events := env.Client.CoreV1().Events(env.Namespace)
	created, err := events.Create(ctx, e, metav1.CreateOptions{})
	if err != nil {
		return env.errorf("failed to record event %s for probe %d: %w", "이벤트 %s(프로브 %d) 기록에 실패했습니다: %w", e.Name, p.n, err)
	}
	env.remember("event", created, events.Delete, metav1.DeleteOptions{})
	r.recorded[p.n] = true
	return nil
}

// ServiceReachedMessage is the message of a ServiceReached Event: the
// name looked up, the address cluster DNS answered ("?" when the client's
// log has none), the URL fetched by that name and the pod that answered.
// The dashboard's map reads the Event by this shape (static/js/map.js).
func ServiceReachedMessage(fqdn, address, replica string) string {
	if address == "" {
		address = "?"
	}
	return "nslookup " + fqdn + " → " + address + "; wget http://" + fqdn + "/ → answered by " + replica
}

// hasRealNode tells whether a Ready node runs containers for real.
func hasRealNode(ctx context.Context, env *Env) (bool, error) {
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: runtimeLabel + "=" + realRuntime})
	if err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
	}
	return false, nil
}

// waitEndpoints waits until the ready endpoints of service svc (pod name →
// address, from its EndpointSlices) satisfy done, and lists them.
func waitEndpoints(ctx context.Context, env *Env, svc string, done func(ready map[string]string) bool) (string, error) {
	var ready map[string]string
	err := until(ctx, env, textf("the endpoints of service %s", "service %s의 엔드포인트", svc), func(ctx context.Context) (bool, error) {
		list, err := env.Client.DiscoveryV1().EndpointSlices(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err != nil {
			return false, err
		}
		ready = map[string]string{}
		for _, sl := range list.Items {
			for _, e := range sl.Endpoints {
				if e.TargetRef == nil || len(e.Addresses) == 0 || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
					continue
				}
				ready[e.TargetRef.Name] = e.Addresses[0]
			}
		}
		return done(ready), nil
	})
	if err != nil {
		return "", err
	}
	var out []string
	for _, name := range sortedNames(ready) {
		out = append(out, name+"="+ready[name])
	}
	return strings.Join(out, ", "), nil
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// probeScript is the client's loop: once a second, look the Service's name
// up (the answer after the "Name:" line of busybox nslookup) and fetch its
// page by name, printing "probe N lookup=ADDRESS reply=POD". (The demo
// image's busybox wget crashes with -T, so timeout bounds it.)
func probeScript(fqdn string) string {
	return `i=0; while true; do i=$((i+1)); ` +
		`a=$(nslookup ` + fqdn + ` 2>&1 | awk '/^Name:/ {n=1} n && /^Address/ {print $NF; exit}'); ` +
		`r=$(timeout 3 wget -q -O - http://` + fqdn + `/ 2>/dev/null | sed -n 's/.*Hello from \([^<]*\).*/\1/p'); ` +
		`echo "probe $i lookup=$a reply=$r"; sleep 1; done`
}

// probe is one line of the client's log.
type probe struct {
	n       int
	lookup  string
	replica string
}

// readProbes reads the client's log (kubectl logs client).
func readProbes(ctx context.Context, env *Env, pod string) ([]probe, error) {
	raw, err := env.Client.CoreV1().Pods(env.Namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var out []probe
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var p probe
		rest, ok := strings.CutPrefix(sc.Text(), "probe ")
		if !ok {
			continue
		}
		num, rest, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		p.n = n
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "lookup="); ok {
				p.lookup = v
			} else if v, ok := strings.CutPrefix(f, "reply="); ok {
				p.replica = v
			}
		}
		out = append(out, p)
	}
	return out, nil
}
