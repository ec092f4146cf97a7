// Narration: what each step of the cluster map means, in plain words, in
// English and in Korean (the seed notes' language). Texts are templates
// whose {placeholders} are filled from the step and then set as textContent,
// never parsed as HTML.

export const LANGS = ["en", "ko"];
const STORAGE_KEY = "glassplane.lang";

const TEXTS = {
  request: {
    en: "{user} asked the API server to {verb} {object} (“{action}”). kube-apiserver authenticates the request, checks with RBAC that this user may do it, and runs admission (defaults, then validation).",
    ko: "{user}이(가) API 서버에 {object} {verbKo} 요청(“{action}”)을 보냅니다. kube-apiserver가 요청을 인증하고 RBAC로 권한을 확인한 뒤, admission 단계에서 기본값을 채우고 요청이 올바른 포맷인지 검증합니다.",
  },
  denied: {
    en: "The API server refused “{action}” on {object} from {user} with {code}: {message}. Nothing was written to etcd.",
    ko: "kube-apiserver가 {user}의 {object}에 대한 “{action}” 요청을 {code}로 거부했습니다: {message}. etcd에는 아무것도 저장되지 않습니다.",
  },
  etcd: {
    en: "The request passed every check, so the API server stores the object in etcd under {key}. etcd revision {rev} becomes its resourceVersion: the desired state is now recorded.",
    ko: "검증이 끝나면 kube-apiserver가 etcd의 {key} 키에 객체를 저장합니다. etcd 리비전 {rev}이(가) resourceVersion이 되고, 이제 원하는 상태(Desired State)가 기록되었습니다.",
  },
  "watch-scheduler": {
    en: "The scheduler watches the API server. It sees pod {pod}, Pending with no node yet, and picks one: first filter (resources, taints, affinity), then score.",
    ko: "스케줄러는 API 서버를 watch 하고 있습니다. 아직 노드가 정해지지 않은 Pending 상태의 pod {pod}를 발견하고, Filter 단계와 Score 단계로 적절한 노드를 고릅니다.",
  },
  bind: {
    en: "The scheduler chose {node} and tells the API server by creating a Binding for {pod}. It never talks to the node itself: everything goes through the API server (hub and spoke).",
    ko: "스케줄러가 {node} 노드를 선택하고, Binding을 생성해 API 서버에 전달합니다. 스케줄러는 노드와 직접 통신하지 않고, 모든 통신은 API 서버를 거칩니다 (Hub & Spoke).",
  },
  "watch-node": {
    en: "The node agent (kubelet) on {node} watches for pods bound to its node. It receives {pod} from the API server and starts it.",
    ko: "{node} 노드의 kubelet은 자기 노드에 배치된 pod를 watch 하고 있습니다. kube-apiserver에서 pod {pod}의 정보를 전달받아 실행을 시작합니다.",
  },
  "runtime-pulling": {
    en: "The kubelet on {node} asks containerd to pull the image. {message}",
    ko: "{node} 노드의 kubelet이 컨테이너 런타임(containerd)에 이미지를 받아오도록 요청합니다. {message}",
  },
  "runtime-pulled": {
    en: "containerd on {node} has the image. {message}",
    ko: "{node} 노드의 containerd에 이미지가 준비되었습니다. {message}",
  },
  "runtime-created": {
    en: "The kubelet asks containerd to create the container. {message}",
    ko: "kubelet이 컨테이너 런타임(containerd)을 사용해 컨테이너를 생성합니다. {message}",
  },
  "runtime-started": {
    en: "containerd starts the container. {message}",
    ko: "containerd가 컨테이너를 실행합니다. {message}",
  },
  "runtime-other": {
    en: "The kubelet on {node} reports {reason}: {message}",
    ko: "{node} 노드의 kubelet이 {reason} 이벤트를 보고합니다: {message}",
  },
  status: {
    en: "The kubelet on {node} reports the pod's status to the API server ({action}); the API server stores it in etcd like any other write.",
    ko: "{node} 노드의 kubelet이 pod의 상태를 API 서버에 보고합니다 ({action}). API 서버는 다른 요청과 똑같이 이를 etcd에 저장합니다.",
  },
  running: {
    en: "Pod {pod} is Running on {node}. Every watcher, this dashboard included, hears it from the API server: the current state now matches the desired state.",
    ko: "pod {pod}가 {node} 노드에서 Running 상태가 되었습니다. 이 대시보드를 포함한 모든 watcher가 API 서버로부터 변경을 전달받습니다. 이제 현재 상태(Current State)가 원하는 상태(Desired State)와 같습니다.",
  },
  phase: {
    en: "Pod {pod} is now {phase}; the API server tells every watcher.",
    ko: "pod {pod}가 {phase} 상태가 되었습니다. API 서버가 모든 watcher에게 변경을 알립니다.",
  },
  deleted: {
    en: "Pod {pod} is gone from etcd; the API server tells every watcher.",
    ko: "pod {pod}가 etcd에서 삭제되었습니다. API 서버가 모든 watcher에게 알립니다.",
  },
  controller: {
    en: "The controller manager ({user}) works through the API server like everyone else: “{action}” on {object}, to keep the cluster at the state you declared.",
    ko: "컨트롤러 매니저({user})도 다른 컴포넌트처럼 API 서버를 통해 {object}에 “{action}” 작업을 수행합니다. 사용자가 선언한 상태를 유지하기 위해서입니다.",
  },
  "pod-ready": {
    en: "Pod {pod} on {node} is Ready: its readiness probe (or its containers' start) says it can take traffic. The EndpointSlice controller watches pods, so it hears of it from the API server and will add the pod to the endpoints of every Service whose selector matches it.",
    ko: "{node} 노드의 pod {pod}가 Ready 상태가 되었습니다. 이제 트래픽을 받을 수 있다는 뜻입니다. pod를 watch 하는 EndpointSlice 컨트롤러가 API 서버로부터 이 변화를 전달받고, 셀렉터가 이 pod를 가리키는 Service의 엔드포인트에 pod를 추가합니다.",
  },
  "pod-unready": {
    en: "Pod {pod} is no longer Ready. The EndpointSlice controller hears of it and marks the pod's endpoint not ready, so the Services that select it stop sending it new connections.",
    ko: "pod {pod}가 더 이상 Ready 상태가 아닙니다. EndpointSlice 컨트롤러가 이를 전달받아 해당 엔드포인트를 준비되지 않음으로 표시하고, 이 pod를 선택한 Service는 더 이상 새 연결을 보내지 않습니다.",
  },
  endpointslice: {
    en: "The EndpointSlice controller writes {object} (“{action}”): the Service's endpoints, each a pod's IP with its ready, serving and terminating conditions. It goes through the API server like every other write, and every node's service proxy watches EndpointSlices.",
    ko: "EndpointSlice 컨트롤러가 {object}을(를) 기록합니다(“{action}”). Service의 엔드포인트 목록으로, 각 항목은 pod의 IP와 ready, serving, terminating 상태입니다. 다른 쓰기와 마찬가지로 API 서버를 거치며, 모든 노드의 서비스 프록시가 EndpointSlice를 watch 하고 있습니다.",
  },
  "endpoints-programmed": {
    en: "The service proxy on {node} saw the new endpoints of Service {namespace}/{service} and reprogrammed the node's packet rules, so connections to the Service now go to the ready pods: {message}",
    ko: "{node} 노드의 서비스 프록시가 Service {namespace}/{service}의 새 엔드포인트를 보고 노드의 패킷 규칙을 다시 설정했습니다. 이제 Service로 가는 연결은 Ready 상태인 pod로 전달됩니다: {message}",
  },
  "dns-lookup": {
    en: "Pod {pod} looks up {fqdn}: its resolv.conf sends the query to cluster DNS (the kube-dns Service). Cluster DNS is CoreDNS, an API client like the other components: it watches Services and EndpointSlices through the API server, so it answers from what it already knows, without asking the API server for each name.",
    ko: "pod {pod}가 {fqdn}을(를) 조회합니다. pod의 resolv.conf에 따라 질의는 클러스터 DNS(kube-dns Service)로 갑니다. 클러스터 DNS는 CoreDNS이며, 다른 컴포넌트처럼 API 클라이언트입니다. API 서버를 통해 Service와 EndpointSlice를 watch 하고 있으므로, 이름마다 API 서버에 묻지 않고 이미 알고 있는 내용으로 답합니다.",
  },
  "dns-answer": {
    en: "Cluster DNS answers pod {pod} with an A record: {fqdn} is {address}, the address of Service {namespace}/{service}. For a ClusterIP Service that is its cluster IP, which stays the same while the pods behind the Service come and go.",
    ko: "클러스터 DNS가 pod {pod}에 A 레코드로 답합니다: {fqdn}의 주소는 Service {namespace}/{service}의 주소인 {address}입니다. ClusterIP Service라면 이 주소는 클러스터 IP이고, Service 뒤의 pod가 바뀌어도 그대로입니다.",
  },
  "service-connect": {
    en: "Pod {pod} connects to {service}:{port} at {address}, and pod {replica} answers. No component relays the connection: the service proxy's rules in the node's kernel send it to one of the Service's ready endpoints. (The demo read this in the client's log and recorded it as a ServiceReached Event.)",
    ko: "pod {pod}가 {address}의 {service}:{port}로 연결하고, pod {replica}가 응답합니다. 연결을 중계하는 컴포넌트는 없습니다. 노드 커널에 설정된 서비스 프록시의 규칙이 연결을 Service의 Ready 엔드포인트 중 하나로 보냅니다. (데모가 클라이언트 로그에서 이 내용을 읽어 ServiceReached 이벤트로 기록했습니다.)",
  },
  "failed-scheduling": {
    en: "The scheduler found no node for {pod}: {message}",
    ko: "스케줄러가 pod {pod}를 배치할 노드를 찾지 못했습니다: {message}",
  },
};

// CAUSE says the latest step a person caused, above the narration of what
// the cluster does about it.
const CAUSE = {
  done: {
    en: "{time} {user} {did} {object}. What the cluster does about it:",
    ko: "{time} {user}이(가) {object}을(를) {didKo}했습니다. 클러스터가 이어서 하는 일:",
  },
  refused: {
    en: "{time} {user} tried to {verb} {object}; the API server refused it with {code}.",
    ko: "{time} {user}이(가) {object}을(를) {didKo}하려 했지만 API 서버가 {code}로 거부했습니다.",
  },
};

const VERBS = {
  create: { en: "created", ko: "생성" },
  update: { en: "updated", ko: "수정" },
  patch: { en: "patched", ko: "패치" },
  delete: { en: "deleted", ko: "삭제" },
  deletecollection: { en: "deleted", ko: "삭제" },
};

const UI = {
  en: { idle: "Apply a manifest (the Apply page or kubectl) and watch each step travel through the cluster." },
  ko: { idle: "매니페스트를 적용하면 (Apply 페이지 또는 kubectl) 각 단계가 클러스터를 지나가는 모습을 볼 수 있습니다." },
};

// singular is a resource's name for one object ("pods" → "pod").
function singular(resource) {
  if (resource === "endpoints") return resource;
  if (resource.endsWith("ies")) return `${resource.slice(0, -3)}y`;
  if (/(ss|x|ch|sh)es$/.test(resource)) return resource.slice(0, -2);
  return resource.endsWith("s") ? resource.slice(0, -1) : resource;
}

// objectText names what a request acted on: "pod default/mypod", "node
// n1", "pods in default", with its subresource ("pod default/x (binding)").
export function objectText({ resource, subresource, namespace, name }, lang = "en") {
  if (!resource) return name || "";
  let s;
  if (name) s = `${singular(resource)} ${namespace ? `${namespace}/` : ""}${name}`;
  else if (namespace) s = lang === "ko" ? `${namespace} 네임스페이스의 ${resource}` : `${resource} in ${namespace}`;
  else s = resource;
  return subresource ? `${s} (${subresource})` : s;
}

// targetObject reads a map step's target ("pods/default/mypod", the label
// after the action) back into what the request acted on.
function targetObject(step) {
  const action = step.vars?.action || "";
  const label = step.label || "";
  if (!action || !label.startsWith(`${action} `)) return null;
  const [resource, ...rest] = label.slice(action.length + 1).split("/");
  const subresource = action.includes("/") ? action.slice(action.indexOf("/") + 1) : "";
  if (rest.length >= 2) return { resource, subresource, namespace: rest[0], name: rest.slice(1).join("/") };
  return { resource, subresource, name: rest[0] || "" };
}

function fill(tpl, vars) {
  return tpl.replace(/\{(\w+)\}/g, (_, name) => {
    const v = vars[name];
    return v === undefined || v === null || v === "" ? "?" : String(v);
  });
}

// isPerson tells whether a user is a person (or their own service
// account), not a component of the cluster.
export function isPerson(user) {
  if (!user) return false;
  if (user.startsWith("system:serviceaccount:")) return !user.startsWith("system:serviceaccount:kube-system:");
  return !user.startsWith("system:");
}

// causeText says the step a person caused, from its audit message: "10:41:03
// glassplane-admin created pod default/mypod. What the cluster does about it:".
export function causeText(m, lang, time) {
  const verb = (m.verb || "").toLowerCase();
  const v = VERBS[verb] || { en: verb, ko: verb };
  const t = m.failed ? CAUSE.refused : CAUSE.done;
  return fill(t[lang] || t.en, {
    time, user: m.component, verb: verb === "deletecollection" ? "delete" : verb, did: v.en, didKo: v.ko,
    object: objectText(m, lang), code: m.code || "",
  });
}

// currentLang is the remembered language, English by default.
export function currentLang() {
  try {
    const v = localStorage.getItem(STORAGE_KEY);
    if (LANGS.includes(v)) return v;
  } catch {
    // Storage may be unavailable; English it is.
  }
  return "en";
}

export function setLang(lang) {
  if (!LANGS.includes(lang)) return;
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch {
    // Not remembered, still applied.
  }
}

// narrate returns the explanation of a step in lang.
export function narrate(step, lang) {
  const t = TEXTS[step.kind] || TEXTS.request;
  const vars = { ...step.vars };
  const target = targetObject(step);
  const verb = (vars.action || "").split(" ")[0];
  vars.object ??= target ? objectText(target, lang) : vars.pod;
  vars.verb ??= verb === "deletecollection" ? "delete" : verb;
  vars.verbKo ??= VERBS[verb]?.ko || verb;
  return fill(t[lang] || t.en, vars);
}

export function idleText(lang) {
  return (UI[lang] || UI.en).idle;
}
