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
// which its recorder sends asynchronously.
import { el, byData } from "./dom.js";
import { currentLang, setLang, narrate, idleText, LANGS } from "./narration.js";

const SVG = "http://www.w3.org/2000/svg";
const MUTATING = new Set(["create", "update", "patch", "delete", "deletecollection"]);
// Heartbeats and the Events' own writes would drown the steps that matter.
const QUIET = [["leases", ""], ["events", ""], ["nodes", "status"]];
const HOLD_MS = 1500;
const RUNNING_HOLD_MS = 4000;
const MAX_STEPS = 400;
const VISIBLE_STEPS = 30;
const RUNTIME_REASONS = new Set(["Pulling", "Pulled", "Created", "Started"]);

// Geometry shared with components/format.go.
const NODE_Y = 272, NODE_W = 220, NODE_H = 212, NODE_GAP = 24, MIN_WIDTH = 1000, HEIGHT = 500, PODS_PER_ROW = 10;
const nodeX = (i) => 20 + i * (NODE_W + NODE_GAP);

function svgEl(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
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

class ClusterMap {
  constructor(svg) {
    this.svg = svg;
    this.lang = currentLang();
    this.queue = [];
    this.busy = false;
    this.held = [];
    this.auditRevs = new Set();
    this.watchNodes = new Map(); // revision -> nodeName of a pod watch event
    this.pods = new Map(); // ns/name -> {node, phase}
    this.dots = new Map(); // ns/name -> the pod's circle on the map
    this.placed = new Map(); // ns/name -> revision of the state drawn
    this.started = new Set(); // pods with a Started Event
    this.current = null;
    // history holds the rendered steps for the keyboard; cursor is the one
    // narrated while the presenter moves through them (-1: follow live).
    this.history = [];
    this.cursor = -1;
    document.addEventListener("glassplane:navigate", (ev) => this.navigate(ev.detail.dir));
    this.stepList = document.getElementById("steps");
    this.narration = document.getElementById("narration-text");
    window.glassplane = window.glassplane || {};
    window.glassplane.steps = [];
    for (const chip of document.querySelectorAll(".pods .pod[data-name]")) {
      this.pods.set(`${chip.dataset.namespace}/${chip.dataset.name}`, { node: chip.dataset.node || "", phase: chip.dataset.phase || "Pending" });
    }
    this.layoutEdges();
    this.setupLang();
    setInterval(() => this.release(), 250);
  }

  box(id) {
    const g = byData("[data-box]", "box", id, this.svg);
    if (!g) return null;
    const d = g.dataset;
    return { g, x: +d.x, y: +d.y, w: +d.w, h: +d.h, cx: +d.x + +d.w / 2, cy: +d.y + +d.h / 2 };
  }

  layoutEdges() {
    for (const line of this.svg.querySelectorAll("line.edge")) {
      const a = this.box(line.dataset.from), b = this.box(line.dataset.to);
      if (!a || !b) continue;
      line.setAttribute("x1", a.cx); line.setAttribute("y1", a.cy);
      line.setAttribute("x2", b.cx); line.setAttribute("y2", b.cy);
    }
  }

  nodeGroup(name) {
    return byData(".map-node", "node", name, this.svg);
  }

  // ensureNode adds a node that registered after the page was rendered.
  ensureNode(name, ready) {
    if (!name) return null;
    let g = this.nodeGroup(name);
    if (g) {
      if (ready) g.dataset.ready = ready;
      return g;
    }
    const slot = this.svg.querySelectorAll(".map-node").length;
    const x = nodeX(slot);
    g = svgEl("g", { class: "map-node", "data-testid": `map-node-${name}`, "data-node": name, "data-ready": ready || "Unknown", "data-slot": slot });
    g.append(svgEl("rect", { class: "node-frame", x, y: NODE_Y, width: NODE_W, height: NODE_H, rx: 12 }));
    g.append(svgEl("text", { class: "node-title", x: x + 12, y: NODE_Y + 20 }, name));
    g.append(this.newBox(`node:${name}`, "node agent", "kubelet", x + 10, NODE_Y + 30, NODE_W - 20, 44));
    g.append(this.newBox(`containerd:${name}`, "containerd", "container runtime", x + 10, NODE_Y + 92, NODE_W - 20, 40));
    g.append(svgEl("g", { class: "map-pods", "data-map-pods-of": name }));
    document.getElementById("map-nodes").append(g);
    const edges = document.getElementById("map-edges");
    edges.append(svgEl("line", { class: "edge", "data-from": `node:${name}`, "data-to": "apiserver" }));
    edges.append(svgEl("line", { class: "edge", "data-from": `node:${name}`, "data-to": `containerd:${name}` }));
    this.svg.setAttribute("viewBox", `0 0 ${Math.max(MIN_WIDTH, 20 + (slot + 1) * (NODE_W + NODE_GAP))} ${HEIGHT}`);
    this.layoutEdges();
    return g;
  }

  newBox(id, label, sub, x, y, w, h) {
    const g = svgEl("g", { class: "map-box", "data-testid": `map-box-${id}`, "data-box": id, "data-x": x, "data-y": y, "data-w": w, "data-h": h });
    g.append(svgEl("rect", { x, y, width: w, height: h, rx: 10 }));
    g.append(svgEl("text", { class: "box-label", x: x + w / 2, y: y + h / 2 - 2 }, label));
    g.append(svgEl("text", { class: "box-sub", x: x + w / 2, y: y + h / 2 + 14 }, sub));
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
    const old = dot?.parentNode;
    if (m.eventType === "DELETED" || !m.nodeName) {
      dot?.remove();
      this.dots.delete(key);
      if (old) this.relayoutPods(old);
      return;
    }
    const node = this.ensureNode(m.nodeName);
    const pods = node.querySelector(".map-pods");
    if (!dot) {
      dot = svgEl("circle", { class: "map-pod", r: 7, "data-testid": `map-pod-${m.namespace}-${m.name}`, "data-namespace": m.namespace || "", "data-name": m.name });
      dot.append(svgEl("title"));
      this.dots.set(key, dot);
    }
    dot.dataset.phase = m.phase || "Pending";
    dot.querySelector("title").textContent = `${m.namespace}/${m.name}: ${dot.dataset.phase}`;
    if (dot.parentNode !== pods) pods.append(dot);
    this.relayoutPods(pods);
    if (old && old !== pods) this.relayoutPods(old);
  }

  relayoutPods(pods) {
    const slot = +(pods.closest(".map-node")?.dataset.slot || 0);
    [...pods.querySelectorAll("circle.map-pod")].forEach((c, j) => {
      c.setAttribute("cx", nodeX(slot) + 20 + (j % PODS_PER_ROW) * 20);
      c.setAttribute("cy", NODE_Y + 152 + Math.floor(j / PODS_PER_ROW) * 20);
    });
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

  auditSteps(m) {
    const quiet = QUIET.some(([r, s]) => m.resource === r && (m.subresource || "") === s);
    if (quiet && !m.failed) return [];
    if (!MUTATING.has(m.verb) && !m.failed) return [];
    const from = componentOf(m.component);
    const target = [m.resource, m.namespace, m.name].filter(Boolean).join("/");
    const vars = { user: m.component, action: m.action, code: m.code, message: m.message, key: m.key, rev: m.revision, pod: m.name, node: from.startsWith("node:") ? from.slice(5) : "" };
    if (m.failed) {
      return [{ kind: "denied", from, to: "apiserver", label: `${m.code || "refused"} ${m.action}`, failed: true, vars }];
    }
    const steps = [];
    if (from === "scheduler" && m.resource === "pods" && m.subresource === "binding") {
      steps.push({ kind: "bind", from, to: "apiserver", label: `bind ${m.name}`, vars });
    } else if (from.startsWith("node:") && m.resource === "pods" && m.subresource === "status") {
      steps.push({ kind: "status", from, to: "apiserver", label: `${m.verb} pods/status ${m.name}`, vars });
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
    const vars = { pod: m.name, node: m.nodeName || prev?.node || "", phase: m.phase, rev: m.revision };
    let running = false;
    if (m.eventType === "DELETED") {
      this.pods.delete(key);
      this.started.delete(key);
      steps.push({ kind: "deleted", from: "apiserver", to: "dashboard", label: `${m.name} deleted`, vars, pod: m });
    } else {
      const node = m.nodeName || "", phase = m.phase || "Pending";
      this.pods.set(key, { node, phase });
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
    }
    // When steps come faster than they can be animated, the pods' dots
    // follow the cluster at once and the animations catch up behind.
    if (this.catchingUp()) this.placePod(m);
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
    if (m.kind !== "Pod") return;
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

  // hold parks a group of steps until its condition holds or its deadline
  // passes; before >= 0 places it ahead of that held group.
  hold(steps, cond, before = -1) {
    const h = { steps, ...cond };
    if (before >= 0) this.held.splice(before, 0, h);
    else this.held.push(h);
  }

  // release queues, in arrival order, every held group whose wait is over.
  release() {
    const now = Date.now();
    const keep = [];
    for (const h of this.held) {
      const ready = (!h.waitRev || this.auditRevs.has(h.waitRev)) &&
        (!h.waitStarted || this.started.has(h.waitStarted)) &&
        (!h.bindRev || this.watchNodes.has(h.bindRev));
      if (!ready && now < h.deadline) {
        keep.push(h);
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
    return this.queue.length > 3 || this.held.length > 8;
  }

  enqueue(step) {
    if (step.kind === "silent") {
      this.placePod(step.pod);
      return;
    }
    this.queue.push(step);
    if (!this.busy) this.next();
  }

  next() {
    const step = this.queue.shift();
    if (!step) {
      this.busy = false;
      return;
    }
    this.busy = true;
    this.render(step);
    const backlog = this.queue.length;
    // A few queued steps play at reading pace; a longer queue hurries so
    // the map is never more than a second or two behind the cluster.
    const ms = backlog > 20 ? 0 : backlog > 3 ? 150 : 900;
    this.animate(step, ms).then(() => {
      if (step.pod) this.placePod(step.pod);
      this.next();
    });
  }

  // render records the step, lists it and narrates it.
  render(step) {
    const steps = window.glassplane.steps;
    steps.push({ kind: step.kind, label: step.label, from: step.from, to: step.to, pod: step.vars?.pod || "" });
    if (steps.length > MAX_STEPS) steps.shift();
    this.svg.dataset.steps = String(steps.length);
    this.svg.dataset.lastStep = step.kind;
    this.history.push(step);
    if (this.history.length > MAX_STEPS) {
      this.history.shift();
      if (this.cursor > 0) this.cursor--;
    }
    if (this.stepList) {
      const item = el("li", { class: `step step-${step.kind}${step.failed ? " failed" : ""}`, "data-testid": "step", "data-kind": step.kind },
        el("span", { class: "step-route" }, `${step.from} → ${step.to}`),
        el("span", { class: "step-label" }, step.label));
      item.addEventListener("click", () => {
        this.current = step;
        this.narrate(step);
      });
      this.stepList.prepend(item);
      while (this.stepList.children.length > VISIBLE_STEPS) this.stepList.lastElementChild.remove();
      step.item = item;
    }
    if (this.cursor >= 0) return;
    this.current = step;
    this.narrate(step);
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
    if (!a || !b || ms === 0) return Promise.resolve();
    const packets = document.getElementById("map-packets");
    const p = svgEl("g", { class: `packet packet-${step.kind}${step.failed ? " failed" : ""}`, "data-kind": step.kind });
    p.append(svgEl("circle", { r: 8 }));
    const label = svgEl("text", { class: "packet-label", x: 12, y: -10 }, step.label.length > 60 ? `${step.label.slice(0, 57)}…` : step.label);
    p.append(label);
    packets.append(p);
    const edge = [...this.svg.querySelectorAll("line.edge")].find((l) =>
      (l.dataset.from === step.from && l.dataset.to === step.to) || (l.dataset.from === step.to && l.dataset.to === step.from));
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
        setTimeout(() => p.remove(), step.failed ? 1500 : 300);
        resolve();
      };
      requestAnimationFrame(frame);
    });
  }

  setupLang() {
    for (const btn of document.querySelectorAll(".lang-btn")) {
      btn.setAttribute("aria-pressed", String(btn.dataset.lang === this.lang));
      btn.addEventListener("click", () => {
        if (!LANGS.includes(btn.dataset.lang)) return;
        this.lang = btn.dataset.lang;
        setLang(this.lang);
        for (const b of document.querySelectorAll(".lang-btn")) b.setAttribute("aria-pressed", String(b.dataset.lang === this.lang));
        document.documentElement.dataset.lang = this.lang;
        this.narrate(this.current);
      });
    }
    document.documentElement.dataset.lang = this.lang;
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
