// Cluster map: the architecture diagram on the home page. Every real step
// the websocket reports (audit events, watch events, the kubelet's Events)
// becomes a message moving along the edge it travels, in order, with its
// label, and the narration panel explains it. Nothing here is invented: each
// step is derived from one message the API server or a component produced.
//
// Order. The hub sends an audit event when a request completes, which is
// after its etcd write, so a watch event can arrive before the request that
// caused it. A watch step therefore waits (briefly) for the audit event of
// the same etcd revision; a bind waits for the watch event that names the
// chosen node; and a pod's "Running" waits for the kubelet's Started Event,
// which its recorder sends asynchronously. Steps of one object leave the
// wait in the order they came: one whose wait is over still waits behind
// an earlier step of the same object (a bind seen before the create's
// request completed waits for the create's steps).
//
// Pace. At a classroom's pace every step is animated and a pod's dot changes
// when its step arrives. The map stays within MAX_LAG_MS of the steps it
// is given: a step's animation shares what is left of that second with
// the steps queued behind it, and a step that waited longer is listed
// without animation. When steps come faster than they can be shown, the
// map catches up: the dots follow the watch events, placed four times a
// second (each placement repaints the map, a large SVG), a short queue
// hurries, and a long one switches the map to condensed for a while: the
// steps are recorded and listed a few times a second, without animation, so
// the animations never hold the state back nor keep the page repainting.
// Boxes, edges and nodes are looked up in maps, not by querying the SVG
// (a map of a hundred nodes has over a thousand elements).
import { el, pacer } from "./dom.js";
import { currentLang, narrate, idleText } from "./narration.js";
import { setText } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const MUTATING = new Set(["create", "update", "patch", "delete", "deletecollection"]);
// Heartbeats and the Events' own writes would drown the steps that matter.
const QUIET = [["leases", ""], ["events", ""], ["nodes", "status"]];
const HOLD_MS = 1500;
const RUNNING_HOLD_MS = 4000;
const MAX_STEPS = 400;
// A step's label on the map is cut to LABEL_CHARS characters.
const LABEL_CHARS = 34;
const VISIBLE_STEPS = 30;
// A condensed update lists at most LISTED_STEPS new steps (all are recorded).
const LISTED_STEPS = 8;
// A queue longer than CONDENSE_STEPS condenses the map for CONDENSED_MS
// (renewed while steps come faster than it could animate them); meanwhile
// steps are listed, and while catching up the dots placed, every
// CONDENSED_EVERY_MS.
const CONDENSE_STEPS = 20;
const CONDENSED_MS = 2000;
const CONDENSED_EVERY_MS = 250;
// A step is animated for at most STEP_MS, at least MIN_STEP_MS, and never
// starts more than MAX_LAG_MS after it was queued.
const STEP_MS = 900;
const MIN_STEP_MS = 120;
const MAX_LAG_MS = 1000;
const RUNTIME_REASONS = new Set(["Pulling", "Pulled", "Created", "Started"]);
// PROGRAMMED is the reason of the Event a node's service proxy records on
// a Service when it programmed the Service's endpoints.
const PROGRAMMED = "EndpointsProgrammed";
// REACHED is the reason of the Event the service-dns demo records on its
// client pod for each reply the client got (web/demo ReasonServiceReached);
// REACHED_MESSAGE is the shape of its message (ServiceReachedMessage): the
// name looked up, cluster DNS's answer, the URL fetched by that name and the
// pod that answered.
const REACHED = "ServiceReached";
const REACHED_MESSAGE = /^nslookup (\S+) → (\S+); wget (\S+) → answered by (\S+)$/;

// Geometry shared with components/format.go.
const NODE_Y = 272, NODE_W = 220, NODE_H = 212, NODE_GAP = 24, MIN_WIDTH = 1000, HEIGHT = 500, PODS_PER_ROW = 10;
// The map is drawn at MIN_SCALE percent or wider (components.MapDisplayWidth).
const MIN_SCALE = 75;
const nodeX = (i) => 20 + i * (NODE_W + NODE_GAP);

function svgEl(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

// overlap is the area two rectangles {x, y, w, h} share.
function overlap(p, q) {
  const w = Math.min(p.x + p.w, q.x + q.w) - Math.max(p.x, q.x);
  const h = Math.min(p.y + p.h, q.y + q.h) - Math.max(p.y, q.y);
  return w > 0 && h > 0 ? w * h : 0;
}

// componentOf maps an authenticated user to the box it acts from.
export function componentOf(user) {
  if (!user) return "user";
  if (user === "system:kube-scheduler") return "scheduler";
  if (user.startsWith("system:node:")) return `node:${user.slice("system:node:".length)}`;
  if (user === "system:kube-controller-manager" || user.startsWith("system:serviceaccount:kube-system:")) return "controller-manager";
  return "user";
}

function podKey(m) {
  return `${m.namespace || ""}/${m.name || ""}`;
}

// reachedOf reads a ServiceReached Event's message: the name looked up and
// its address, the Service (the name's first label) and port connected to,
// and the pod that answered; null when the message has another shape.
function reachedOf(message) {
  const m = REACHED_MESSAGE.exec(message || "");
  if (!m) return null;
  const [, fqdn, address, url, replica] = m;
  let port = "";
  try {
    const u = new URL(url);
    port = u.port || (u.protocol === "https:" ? "443" : "80");
  } catch {
    return null;
  }
  return { fqdn, address, service: fqdn.split(".")[0], port, replica };
}

// heldObject names the object a held group of steps is about ("" for none).
function heldObject(h) {
  for (const s of h.steps) {
    const name = s.vars?.pod || s.pod?.name;
    if (name) return name;
  }
  return "";
}

class ClusterMap {
  constructor(svg) {
    this.svg = svg;
    this.lang = currentLang();
    this.queue = [];
    this.busy = false;
    this.condensedUntil = 0;
    this.condenseSoon = pacer(() => this.condense(), CONDENSED_EVERY_MS);
    this.toPlace = new Map(); // ns/name -> the newest watch message to place
    this.placeSoon = pacer(() => this.placePending(), CONDENSED_EVERY_MS);
    this.held = [];
    this.auditRevs = new Set();
    this.watchNodes = new Map(); // revision -> nodeName of a pod watch event
    this.pods = new Map(); // ns/name -> {node, phase}
    this.dots = new Map(); // ns/name -> the pod's circle on the map
    this.placed = new Map(); // ns/name -> revision of the state drawn
    this.started = new Set(); // pods with a Started Event
    this.current = null;
    this.boxes = new Map(); // box id -> its geometry and group
    this.edges = new Map(); // "from|to" -> the edge's line
    this.nodes = new Map(); // node name -> its group
    for (const g of svg.querySelectorAll("[data-box]")) this.addBox(g);
    for (const line of svg.querySelectorAll("line.edge")) this.edges.set(`${line.dataset.from}|${line.dataset.to}`, line);
    for (const g of svg.querySelectorAll(".map-node")) this.nodes.set(g.dataset.node, g);
    // history holds the rendered steps for the keyboard; cursor is the one
    // narrated while the presenter moves through them (-1: follow live).
    this.history = [];
    this.cursor = -1;
    document.addEventListener("glassplane:navigate", (ev) => this.navigate(ev.detail.dir));
    this.stepList = document.getElementById("steps");
    this.narration = document.getElementById("narration-text");
    window.glassplane = window.glassplane || {};
    window.glassplane.steps = [];
    // mapIdle reports whether the map plays no step, holds none back and is
    // not condensed, so that the next steps are animated with their labels
    // (tests wait for it before they make the steps they watch).
    window.glassplane.mapIdle = () => !this.busy && !this.queue.length && !this.held.length && Date.now() >= this.condensedUntil;
    for (const chip of document.querySelectorAll(".pods .pod[data-name]")) {
      this.pods.set(`${chip.dataset.namespace}/${chip.dataset.name}`, { node: chip.dataset.node || "", phase: chip.dataset.phase || "Pending" });
    }
    for (const dot of svg.querySelectorAll("circle.map-pod")) this.dots.set(`${dot.dataset.namespace}/${dot.dataset.name}`, dot);
    this.layoutEdges();
    this.followLang();
    setInterval(() => this.release(), 250);
  }

  addBox(g) {
    const d = g.dataset;
    this.boxes.set(d.box, { g, x: +d.x, y: +d.y, w: +d.w, h: +d.h, cx: +d.x + +d.w / 2, cy: +d.y + +d.h / 2 });
  }

  // box is where a step starts or ends: a component's box, or for
  // "pod:<namespace>/<name>" the pod's dot (podBox).
  box(id) {
    if (id.startsWith("pod:")) return this.podBox(id.slice(4));
    return this.boxes.get(id) || null;
  }

  // podBox is a pod's dot as a box, or its node's agent when the dot is
  // not on the map (null when the map knows no node of the pod).
  podBox(key) {
    const dot = this.dots.get(key);
    if (dot?.isConnected) {
      const cx = +dot.getAttribute("cx"), cy = +dot.getAttribute("cy");
      return { g: dot, x: cx - 7, y: cy - 7, w: 14, h: 14, cx, cy };
    }
    const node = this.pods.get(key)?.node;
    return node ? this.box(`node:${node}`) : null;
  }

  edge(from, to) {
    return this.edges.get(`${from}|${to}`) || this.edges.get(`${to}|${from}`) || null;
  }

  layoutEdges(lines = this.edges.values()) {
    for (const line of lines) {
      const a = this.box(line.dataset.from), b = this.box(line.dataset.to);
      if (!a || !b) continue;
      line.setAttribute("x1", a.cx); line.setAttribute("y1", a.cy);
      line.setAttribute("x2", b.cx); line.setAttribute("y2", b.cy);
    }
  }

  nodeGroup(name) {
    return this.nodes.get(name) || null;
  }

  // ensureNode adds a node that registered after the page was rendered.
  ensureNode(name, ready) {
    if (!name) return null;
    let g = this.nodeGroup(name);
    if (g) {
      if (ready) g.dataset.ready = ready;
      return g;
    }
    const slot = this.nodes.size;
    const x = nodeX(slot);
    g = svgEl("g", { class: "map-node", "data-testid": `map-node-${name}`, "data-node": name, "data-ready": ready || "Unknown", "data-slot": slot });
    g.append(svgEl("rect", { class: "node-frame", x, y: NODE_Y, width: NODE_W, height: NODE_H, rx: 12 }));
    g.append(svgEl("text", { class: "node-title", x: x + 12, y: NODE_Y + 20 }, name));
    g.append(this.newBox(`node:${name}`, ["node agent", "map.node-agent"], ["kubelet"], x + 10, NODE_Y + 30, NODE_W - 20, 44));
    g.append(this.newBox(`containerd:${name}`, ["containerd"], ["container runtime", "map.containerd.sub"], x + 10, NODE_Y + 92, NODE_W - 20, 40));
    g.append(svgEl("g", { class: "map-pods", "data-map-pods-of": name }));
    document.getElementById("map-nodes").append(g);
    this.nodes.set(name, g);
    for (const box of g.querySelectorAll("[data-box]")) this.addBox(box);
    const edges = document.getElementById("map-edges");
    const lines = [
      svgEl("line", { class: "edge", "data-from": `node:${name}`, "data-to": "apiserver" }),
      svgEl("line", { class: "edge", "data-from": `node:${name}`, "data-to": `containerd:${name}` }),
    ];
    for (const line of lines) {
      edges.append(line);
      this.edges.set(`${line.dataset.from}|${line.dataset.to}`, line);
    }
    const width = Math.max(MIN_WIDTH, 20 + (slot + 1) * (NODE_W + NODE_GAP));
    this.svg.setAttribute("viewBox", `0 0 ${width} ${HEIGHT}`);
    this.svg.setAttribute("width", String(Math.floor((width * MIN_SCALE) / 100)));
    this.layoutEdges(lines);
    return g;
  }

  // newBox draws a box; label and sub are [English, i18n key], the key
  // left out for a component's own name.
  newBox(id, [label, labelKey], [sub, subKey], x, y, w, h) {
    const g = svgEl("g", { class: "map-box", "data-testid": `map-box-${id}`, "data-box": id, "data-x": x, "data-y": y, "data-w": w, "data-h": h });
    g.append(svgEl("rect", { x, y, width: w, height: h, rx: 10 }));
    const title = svgEl("text", { class: "box-label", x: x + w / 2, y: y + h / 2 - 2 }, label);
    const small = svgEl("text", { class: "box-sub", x: x + w / 2, y: y + h / 2 + 14 }, sub);
    if (labelKey) setText(title, labelKey, label);
    if (subKey) setText(small, subKey, sub);
    g.append(title, small);
    return g;
  }

  // placePod keeps the pod's dot inside its node, coloured by phase.
  // A pod's dot only moves forward in revisions: when the map places pods
  // ahead of their animations (catchingUp), an animation finishing later
  // must not bring back an older state.
  placePod(m) {
    const key = podKey(m);
    const last = this.placed.get(key) || 0;
    if (m.revision && m.revision < last) return;
    if (m.revision) this.placed.set(key, m.revision);
    let dot = this.dots.get(key) || null;
    if (m.eventType === "DELETED" || !m.nodeName) {
      dot?.remove();
      this.dots.delete(key);
      return;
    }
    const node = this.ensureNode(m.nodeName);
    const pods = node.querySelector(".map-pods");
    if (!dot) {
      dot = svgEl("circle", { class: "map-pod", r: 7, "data-testid": `map-pod-${m.namespace}-${m.name}`, "data-namespace": m.namespace || "", "data-name": m.name });
      dot.append(svgEl("title"));
      this.dots.set(key, dot);
    }
    const phase = m.phase || "Pending";
    const claims = (m.claims || []).join(" ");
    if (dot.dataset.phase !== phase || (dot.dataset.claims || "") !== claims) {
      dot.dataset.phase = phase;
      if (claims) dot.dataset.claims = claims;
      else delete dot.dataset.claims;
      const held = claims ? ` · PersistentVolumeClaim ${m.claims.join(", ")}` : "";
      dot.firstElementChild.textContent = `${m.namespace}/${m.name}: ${phase}${held}`;
    }
    if (dot.parentNode === pods) return;
    this.seat(pods, dot);
    pods.append(dot);
  }

  // seat gives a dot arriving in a node the node's first free place. A dot
  // keeps its place while it stays: a pod leaving does not move the others
  // (the eye can follow them, and the browser lays out and repaints one
  // dot, not the rows after it).
  seat(pods, dot) {
    const taken = new Set();
    for (const c of pods.children) taken.add(c.dataset.seat);
    let j = 0;
    while (taken.has(String(j))) j++;
    const slot = +(pods.parentNode?.dataset.slot || 0);
    dot.dataset.seat = String(j);
    dot.setAttribute("cx", String(nodeX(slot) + 20 + (j % PODS_PER_ROW) * 20));
    dot.setAttribute("cy", String(NODE_Y + 152 + Math.floor(j / PODS_PER_ROW) * 20));
  }

  placePending() {
    const msgs = [...this.toPlace.values()];
    this.toPlace.clear();
    for (const m of msgs) this.placePod(m);
  }

  // --- steps from messages ---

  onAudit(m) {
    if (m.revision) {
      this.auditRevs.add(m.revision);
      if (this.auditRevs.size > 4000) this.auditRevs.delete(this.auditRevs.values().next().value);
    }
    const steps = this.auditSteps(m);
    if (steps.length) {
      const bind = steps[0].kind === "bind" && m.revision;
      // The request came before any held watch event of its revision or later.
      const before = m.revision ? this.held.findIndex((h) => h.waitRev && h.waitRev >= m.revision) : -1;
      this.hold(steps, { bindRev: bind ? m.revision : 0, deadline: Date.now() + HOLD_MS }, before);
    }
    this.release();
  }

  // auditSteps are a request's steps; only a request about a pod names one
  // (a SchedulingDecision is named after its pod, and is not it).
  auditSteps(m) {
    const quiet = QUIET.some(([r, s]) => m.resource === r && (m.subresource || "") === s);
    if (quiet && !m.failed) return [];
    if (!MUTATING.has(m.verb) && !m.failed) return [];
    const from = componentOf(m.component);
    const target = [m.resource, m.namespace, m.name].filter(Boolean).join("/");
    const vars = { user: m.component, action: m.action, code: m.code, message: m.message, key: m.key, rev: m.revision, pod: m.resource === "pods" ? m.name : "", node: from.startsWith("node:") ? from.slice(5) : "" };
    if (m.failed) {
      return [{ kind: "denied", from, to: "apiserver", label: `${m.code || "refused"} ${m.action}`, failed: true, vars }];
    }
    const steps = [];
    if (from === "scheduler" && m.resource === "pods" && m.subresource === "binding") {
      steps.push({ kind: "bind", from, to: "apiserver", label: `bind ${m.name}`, vars });
    } else if (from.startsWith("node:") && m.resource === "pods" && m.subresource === "status") {
      steps.push({ kind: "status", from, to: "apiserver", label: `${m.verb} pods/status ${m.name}`, vars });
    } else if (from === "controller-manager" && m.resource === "endpointslices") {
      steps.push({ kind: "endpointslice", from, to: "apiserver", label: `${m.action} ${target}`, vars });
    } else if (from === "controller-manager") {
      steps.push({ kind: "controller", from, to: "apiserver", label: `${m.action} ${target}`, vars });
    } else {
      steps.push({ kind: "request", from, to: "apiserver", label: `${m.action} ${target}`, vars });
    }
    const etcd = (m.stages || []).find((s) => s.name === "etcd");
    if (m.key && m.revision && (!etcd || etcd.state === "ok")) {
      steps.push({ kind: "etcd", from: "apiserver", to: "etcd", label: `write ${m.key} @${m.revision}`, vars });
    }
    return steps;
  }

  onWatch(m) {
    if (m.kind === "Node") {
      if (m.eventType !== "DELETED") this.ensureNode(m.name, m.ready);
      return;
    }
    if (m.kind !== "Pod") return;
    if (m.nodeName && m.revision) {
      this.watchNodes.set(m.revision, m.nodeName);
      if (this.watchNodes.size > 2000) this.watchNodes.delete(this.watchNodes.keys().next().value);
    }
    const key = podKey(m);
    const prev = this.pods.get(key);
    const steps = [];
    const vars = { pod: m.name, node: m.nodeName || prev?.node || "", phase: m.phase, rev: m.revision, namespace: m.namespace };
    let running = false;
    if (m.eventType === "DELETED") {
      this.pods.delete(key);
      this.started.delete(key);
      steps.push({ kind: "deleted", from: "apiserver", to: "dashboard", label: `${m.name} deleted`, vars, pod: m });
    } else {
      const node = m.nodeName || "", phase = m.phase || "Pending", ready = m.ready || "";
      this.pods.set(key, { node, phase, ready });
      if (!prev && !node) {
        steps.push({ kind: "watch-scheduler", from: "apiserver", to: "scheduler", label: `watch: ${m.name} needs a node`, vars });
      }
      if (node && !prev?.node) {
        this.ensureNode(node);
        steps.push({ kind: "watch-node", from: "apiserver", to: `node:${node}`, label: `watch: ${m.name} bound to ${node}`, vars });
      }
      if ((prev && prev.phase !== phase) || (!prev && phase !== "Pending")) {
        running = phase === "Running";
        steps.push({ kind: running ? "running" : "phase", from: "apiserver", to: "dashboard", label: `${m.name} ${phase}`, vars, pod: m });
      }
      // The first link of the endpoints chain: the EndpointSlice
      // controller watches pods, and a pod turning Ready (or not) changes
      // the endpoints of the Services that select it.
      if (prev && (prev.ready || "") !== ready && (ready === "True" || prev.ready === "True")) {
        steps.push({ kind: ready === "True" ? "pod-ready" : "pod-unready", from: "apiserver", to: "controller-manager", label: `watch: ${m.name} ${ready === "True" ? "Ready" : "not Ready"}`, vars });
      }
    }
    // When steps come faster than they can be animated, the pods' dots
    // follow the cluster and the animations catch up behind.
    if (this.catchingUp()) {
      this.toPlace.set(key, m);
      this.placeSoon();
    }
    const waitRev = this.auditRevs.has(m.revision) ? 0 : m.revision;
    if (!steps.length) {
      this.hold([{ kind: "silent", pod: m }], { waitRev, deadline: Date.now() + HOLD_MS });
    } else {
      const last = steps.at(-1);
      last.pod = m;
      this.hold(steps, {
        waitRev,
        waitStarted: running && !this.started.has(key) ? key : "",
        deadline: Date.now() + (running ? RUNNING_HOLD_MS : HOLD_MS),
      });
    }
    this.release();
  }

  onEvent(m) {
    if (m.kind === "Service" && m.action === PROGRAMMED && m.nodeName) {
      // The last link: the node's service proxy watched the EndpointSlice
      // and programmed the node's rules, and says so in an Event.
      const node = m.nodeName;
      this.ensureNode(node);
      const vars = { service: m.name, namespace: m.namespace, node, message: m.message };
      this.hold([{ kind: "endpoints-programmed", from: `node:${node}`, to: "apiserver", label: `${PROGRAMMED} ${m.name} on ${node}`, vars }], { deadline: 0 });
      this.release();
      return;
    }
    if (m.kind !== "Pod") return;
    if (m.action === REACHED) {
      this.onReached(m);
      return;
    }
    const key = podKey(m);
    const node = this.pods.get(key)?.node || "";
    const vars = { pod: m.name, node, reason: m.action, message: m.message };
    let step = null;
    if (m.component === "kubelet" && node) {
      const kind = RUNTIME_REASONS.has(m.action) ? `runtime-${m.action.toLowerCase()}` : "runtime-other";
      step = { kind, from: `node:${node}`, to: `containerd:${node}`, label: `${m.action}: ${m.message || ""}`, vars, failed: m.eventType === "Warning" };
      if (m.action === "Started") this.started.add(key);
    } else if (m.action === "FailedScheduling") {
      step = { kind: "failed-scheduling", from: "scheduler", to: "apiserver", label: `FailedScheduling ${m.name}`, vars, failed: true };
    }
    // The runtime step came before the pod's held "Running".
    if (step) this.hold([step], { deadline: 0 }, this.held.findIndex((h) => h.waitStarted === key));
    this.release();
  }

  // onReached plays a pod reaching a Service by its name (the service-dns
  // demo's Event): the pod asks cluster DNS, cluster DNS answers with the
  // Service's address, and the pod connects; the node's rules carried the
  // connection to the pod that answered.
  onReached(m) {
    const r = reachedOf(m.message);
    if (!r) return;
    // The Event's related object is the pod that answered; the message
    // names it too, for Events recorded without one.
    if (m.related?.kind === "Pod" && m.related.name) r.replica = m.related.name;
    const key = podKey(m);
    const client = `pod:${key}`, replica = `pod:${m.namespace || ""}/${r.replica}`;
    const vars = { pod: m.name, namespace: m.namespace, node: this.pods.get(key)?.node || "", ...r };
    this.hold([
      { kind: "dns-lookup", from: client, to: "dns", label: `DNS ${r.fqdn}?`, vars },
      { kind: "dns-answer", from: "dns", to: client, label: `A ${r.address}`, vars },
      { kind: "service-connect", from: client, to: replica, label: `connect ${r.service}:${r.port} → ${r.replica}`, vars },
    ], { deadline: 0 });
    this.release();
  }

  // hold parks a group of steps until its condition holds or its deadline
  // passes; before >= 0 places it ahead of that held group.
  hold(steps, cond, before = -1) {
    const h = { steps, ...cond };
    if (before >= 0) this.held.splice(before, 0, h);
    else this.held.push(h);
  }

  // release queues, in arrival order, every held group whose wait is over
  // and that no earlier held group of the same object is still waiting
  // for: a bind whose watch event came must not pass the create that is
  // waiting for its request to complete.
  release() {
    const now = Date.now();
    const keep = [];
    const waiting = new Set(); // objects with a group kept
    for (const h of this.held) {
      const obj = heldObject(h);
      const ready = (!h.waitRev || this.auditRevs.has(h.waitRev)) &&
        (!h.waitStarted || this.started.has(h.waitStarted)) &&
        (!h.bindRev || this.watchNodes.has(h.bindRev));
      if ((!ready && now < h.deadline) || (obj && waiting.has(obj))) {
        keep.push(h);
        if (obj) waiting.add(obj);
        continue;
      }
      if (h.bindRev && this.watchNodes.has(h.bindRev)) {
        const node = this.watchNodes.get(h.bindRev);
        for (const s of h.steps) {
          s.vars.node = node;
          if (s.kind === "bind") s.label = `bind ${s.vars.pod} → ${node}`;
        }
      }
      for (const s of h.steps) this.enqueue(s);
    }
    this.held = keep;
  }

  // catchingUp reports whether steps arrive faster than they are animated.
  catchingUp() {
    return this.queue.length > 3 || this.held.length > 8 || Date.now() < this.condensedUntil;
  }

  enqueue(step) {
    if (step.kind === "silent") {
      this.placePod(step.pod);
      return;
    }
    step.queued = Date.now();
    this.queue.push(step);
    if (!this.busy) this.next();
  }

  next() {
    const now = Date.now();
    if (this.queue.length > CONDENSE_STEPS) this.condensedUntil = now + CONDENSED_MS;
    if (now < this.condensedUntil) {
      this.busy = true;
      this.condenseSoon();
      return;
    }
    // Steps that waited too long are listed, not animated: a backlog must
    // not keep the map seconds behind the list.
    const late = [];
    while (this.queue.length > 1 && now - this.queue[0].queued > MAX_LAG_MS) late.push(this.queue.shift());
    if (late.length) {
      this.render(late);
      for (const s of late) {
        if (s.pod) this.placePod(s.pod);
      }
    }
    const step = this.queue.shift();
    if (!step) {
      this.busy = false;
      return;
    }
    this.busy = true;
    this.render([step]);
    // A lone step plays at reading pace; queued ones share what is left of
    // MAX_LAG_MS, so the last of them starts within it.
    const left = MAX_LAG_MS - (now - step.queued);
    const ms = Math.max(MIN_STEP_MS, Math.min(STEP_MS, left / (1 + this.queue.length)));
    this.animate(step, ms).then(() => {
      if (step.pod) this.placePod(step.pod);
      this.next();
    });
  }

  // condense shows every queued step at once, without animation: the map
  // is too far behind the cluster to play them.
  condense() {
    const steps = this.queue;
    this.queue = [];
    this.busy = false;
    if (!steps.length) return;
    // Still more steps than the map could have animated meanwhile (each
    // takes MIN_STEP_MS at least): it stays condensed, rather than
    // animating a step or two each time the condensed spell ends and
    // condensing again once the queue is long.
    if (steps.length * MIN_STEP_MS > CONDENSED_EVERY_MS) this.condensedUntil = Date.now() + CONDENSED_MS;
    this.render(steps);
    for (const step of steps) {
      if (step.pod) this.placePod(step.pod);
    }
  }

  // render records steps, lists the newest LISTED_STEPS of them and
  // narrates the last.
  render(steps) {
    const recorded = window.glassplane.steps;
    for (const step of steps) {
      recorded.push({ kind: step.kind, label: step.label, from: step.from, to: step.to, pod: step.vars?.pod || "" });
      this.history.push(step);
    }
    if (recorded.length > MAX_STEPS) recorded.splice(0, recorded.length - MAX_STEPS);
    if (this.history.length > MAX_STEPS) {
      const drop = this.history.length - MAX_STEPS;
      this.history.splice(0, drop);
      if (this.cursor >= 0) this.cursor = Math.max(0, this.cursor - drop);
    }
    const last = steps.at(-1);
    this.svg.dataset.steps = String(recorded.length);
    this.svg.dataset.lastStep = last.kind;
    if (this.stepList) {
      const items = steps.slice(-LISTED_STEPS).map((step) => this.stepItem(step));
      this.stepList.prepend(...items.reverse());
      while (this.stepList.children.length > VISIBLE_STEPS) this.stepList.lastElementChild.remove();
    }
    if (this.cursor >= 0) return;
    this.current = last;
    this.narrate(last);
  }

  // stepItem is a step's line in the list; clicking it narrates the step
  // and holds it, as the arrow keys do, until they move past the newest.
  stepItem(step) {
    const item = el("li", { class: `step step-${step.kind}${step.failed ? " failed" : ""}`, "data-testid": "step", "data-kind": step.kind },
      el("span", { class: "step-route" }, `${step.from} → ${step.to}`),
      el("span", { class: "step-label" }, step.label));
    item.addEventListener("click", () => {
      const i = this.history.indexOf(step);
      if (i >= 0) this.cursor = i;
      for (const li of this.stepList?.children || []) li.classList.remove("current");
      item.classList.add("current");
      this.current = step;
      this.narrate(step);
    });
    step.item = item;
    return item;
  }

  // navigate narrates the previous or next rendered step; past the newest
  // it follows the live steps again.
  navigate(dir) {
    if (!this.history.length) return;
    let i = this.cursor < 0 ? this.history.length - 1 : this.cursor;
    i += dir;
    this.cursor = i >= this.history.length ? -1 : Math.max(0, i);
    const step = this.history[this.cursor < 0 ? this.history.length - 1 : this.cursor];
    for (const li of this.stepList?.children || []) li.classList.remove("current");
    step.item?.classList.add("current");
    this.current = step;
    this.narrate(step);
  }

  narrate(step) {
    if (!this.narration) return;
    this.narration.textContent = step ? narrate(step, this.lang) : idleText(this.lang);
    this.narration.dataset.kind = step?.kind || "";
    this.narration.lang = this.lang;
  }

  animate(step, ms) {
    const a = this.box(step.from), b = this.box(step.to);
    if (!a || !b) return Promise.resolve();
    const packets = document.getElementById("map-packets");
    const p = svgEl("g", { class: `packet packet-${step.kind}${step.failed ? " failed" : ""}`, "data-kind": step.kind });
    p.append(svgEl("circle", { r: 8 }));
    const label = svgEl("text", { class: `packet-label packet-${step.kind}${step.failed ? " failed" : ""}`, "data-testid": "packet-label" },
      step.label.length > LABEL_CHARS ? `${step.label.slice(0, LABEL_CHARS - 1)}…` : step.label);
    packets.append(label, p);
    this.placeLabel(label, a, b);
    const edge = this.edge(step.from, step.to);
    edge?.classList.add("active");
    a.g.classList.add("active");
    return new Promise((resolve) => {
      const t0 = performance.now();
      const frame = (now) => {
        const t = Math.min(1, (now - t0) / ms);
        const e = t < 0.5 ? 2 * t * t : 1 - (-2 * t + 2) ** 2 / 2;
        p.setAttribute("transform", `translate(${a.cx + (b.cx - a.cx) * e} ${a.cy + (b.cy - a.cy) * e})`);
        if (t < 1) {
          requestAnimationFrame(frame);
          return;
        }
        a.g.classList.remove("active");
        edge?.classList.remove("active");
        b.g.classList.add("active");
        setTimeout(() => b.g.classList.remove("active"), 400);
        p.classList.add("arrived");
        label.classList.add("arrived");
        setTimeout(() => {
          p.remove();
          label.remove();
        }, step.failed ? 1500 : 300);
        resolve();
      };
      requestAnimationFrame(frame);
    });
  }

  // placeLabel puts a step's label beside its edge where it covers no
  // box's title: it tries points along the edge, and above and below them,
  // and keeps the one whose label overlaps the boxes' titles least (then
  // the boxes themselves). The label stays while the packet travels.
  placeLabel(label, a, b) {
    label.setAttribute("x", 0);
    label.setAttribute("y", 0);
    const size = label.getBBox();
    const w = size.width, h = size.height;
    const near = [];
    const lo = { x: Math.min(a.cx, b.cx) - w, y: Math.min(a.cy, b.cy) - 2 * h };
    const hi = { x: Math.max(a.cx, b.cx) + w, y: Math.max(a.cy, b.cy) + 2 * h };
    for (const box of this.boxes.values()) {
      if (box.x > hi.x || box.x + box.w < lo.x || box.y > hi.y || box.y + box.h < lo.y) continue;
      near.push({ rect: box, titles: this.titlesOf(box) });
    }
    let best = null;
    for (const t of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) {
      for (const dy of [0, -h, h]) {
        const r = { x: a.cx + (b.cx - a.cx) * t - w / 2, y: a.cy + (b.cy - a.cy) * t - h / 2 + dy, w, h };
        let cost = 0;
        for (const n of near) {
          cost += overlap(r, n.rect);
          for (const title of n.titles) cost += 100 * overlap(r, title);
        }
        if (!best || cost < best.cost) best = { cost, r };
        if (cost === 0) break;
      }
      if (best.cost === 0) break;
    }
    label.setAttribute("x", best.r.x - size.x);
    label.setAttribute("y", best.r.y - size.y);
  }

  // titlesOf is where a box's texts are drawn, measured once per size of
  // type (presenter mode changes it).
  titlesOf(box) {
    const key = document.documentElement.classList.contains("presenter") ? "presenter" : "normal";
    if (box.titles?.key !== key) {
      box.titles = { key, rects: [...box.g.querySelectorAll("text")].map((t) => { const r = t.getBBox(); return { x: r.x, y: r.y, w: r.width, h: r.height }; }) };
    }
    return box.titles.rects;
  }

  // followLang narrates in the language the top bar's buttons choose.
  followLang() {
    document.addEventListener("glassplane:lang", (ev) => {
      this.lang = ev.detail.lang;
      this.narrate(this.current);
    });
    this.narrate(this.current);
  }
}

// clusterMap wires the map to the stream; it returns null on pages without one.
export function clusterMap(stream) {
  const svg = document.getElementById("cluster-map");
  if (!svg) return null;
  const map = new ClusterMap(svg);
  stream
    .on("audit", (m) => map.onAudit(m))
    .on("watch", (m) => map.onWatch(m))
    .on("event", (m) => map.onEvent(m));
  return map;
}
