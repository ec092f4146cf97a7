// Scheduler page: plays one attempt's nodes × plugins matrix in the order
// the scheduler worked: each filter column in turn (the nodes it removes
// drop out), then each score column (the bars grow), then the sums and the
// winner. While the pod is pending it follows new attempts and plays each.
// Only textContent, classes and data attributes are touched; the captions
// are said in the chosen language (i18n.js).
import { setText, format } from "./i18n.js";

const STEP_MS = 700;
const POLL_MS = 2000;

const section = document.querySelector('[data-testid="sched"]');
const table = document.getElementById("sched-matrix");
const caption = document.getElementById("sched-caption");

// steps lists the matrix's columns in scheduling order, each with what to
// say when it is revealed: its i18n key, its English and the values to
// fill in.
function steps() {
  const out = [];
  const heads = [...table.querySelectorAll("thead th[data-col]")];
  for (const th of heads) {
    const col = th.dataset.col;
    const plugin = th.dataset.plugin || "";
    if (col.startsWith("f")) {
      const index = Number(col.slice(1));
      const removed = table.querySelectorAll(`tbody tr[data-rejected-at="${index}"]`).length;
      if (removed === 0) out.push({ col, key: "sched.cap.filter-pass", text: "Filter {plugin}: every remaining node passes.", vars: { plugin } });
      else out.push({ col, key: "sched.cap.filter-remove", text: "Filter {plugin}: removes {removed} node(s).", vars: { plugin, removed } });
    } else if (col.startsWith("s")) {
      out.push({ col, key: "sched.cap.score", text: "Score {plugin}: raw score, normalised to 0–100, times weight {weight}.", vars: { plugin, weight: th.dataset.weight } });
    } else {
      out.push({ col, key: "sched.cap.sum", text: "Sum the weighted scores per node.", vars: {} });
    }
  }
  const winner = table.querySelector('tbody tr[data-winner="true"]');
  if (winner) out.push({ col: null, key: "sched.cap.winner", text: "The highest sum wins: {node} ({total}).", vars: { node: winner.dataset.node, total: winner.dataset.total } });
  else out.push({ col: null, key: "sched.cap.none", text: "No node passed every filter: the pod stays Pending.", vars: {} });
  return out;
}

// Player reveals one step at a time.
class Player {
  constructor() {
    this.steps = steps();
    this.at = 0;
    this.timer = null;
  }

  reset() {
    this.stop();
    this.at = 0;
    table.classList.add("playing");
    table.classList.remove("decided");
    for (const cell of table.querySelectorAll("[data-col].shown")) cell.classList.remove("shown");
    for (const row of table.querySelectorAll("tbody tr.out")) row.classList.remove("out");
    setText(caption, "", "");
    table.dataset.step = "0";
  }

  // next reveals the next step; it returns false when none is left.
  next() {
    if (this.at >= this.steps.length) return false;
    const step = this.steps[this.at++];
    table.dataset.step = String(this.at);
    Object.assign(caption.dataset, step.vars);
    setText(caption, step.key, format(step.text, step.vars));
    if (step.col === null) {
      table.classList.add("decided");
      table.classList.remove("playing");
      return true;
    }
    for (const cell of table.querySelectorAll(`[data-col="${step.col}"]`)) cell.classList.add("shown");
    if (step.col.startsWith("f")) {
      const index = step.col.slice(1);
      for (const row of table.querySelectorAll(`tbody tr[data-rejected-at="${index}"]`)) row.classList.add("out");
    }
    return true;
  }

  play() {
    this.reset();
    const tick = () => {
      if (this.next()) this.timer = setTimeout(tick, STEP_MS);
      else this.timer = null;
    };
    tick();
  }

  step() {
    if (!table.classList.contains("playing") && !this.timer) this.reset();
    this.stop();
    this.next();
  }

  showAll() {
    this.reset();
    while (this.next()) { /* reveal everything */ }
  }

  stop() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

// follow polls the pod's attempts (and, without a decision record, its
// scheduling events) while it is pending and reloads to play a new one.
function follow() {
  const known = Number(section.dataset.attempts);
  const knownEvents = Number(section.dataset.events);
  const poll = async () => {
    try {
      const res = await fetch(`${location.pathname}?format=json`, { headers: { Accept: "application/json" } });
      if (res.ok) {
        const st = await res.json();
        if (st.attempts !== known || st.events !== knownEvents || !st.pending) {
          location.assign(`${location.pathname}?play=1`);
          return;
        }
      }
    } catch {
      // The dashboard is restarting: try again.
    }
    setTimeout(poll, POLL_MS);
  };
  setTimeout(poll, POLL_MS);
}

// sizeBars sets each score bar to its normalised score (the page's
// Content-Security-Policy refuses inline style attributes, not the CSSOM).
function sizeBars() {
  for (const cell of table.querySelectorAll("td.scell[data-normalized]")) {
    const fill = cell.querySelector(".bar-fill");
    const n = Math.min(100, Math.max(0, Number(cell.dataset.normalized) || 0));
    if (fill) fill.style.width = `${n}%`;
  }
}

if (table) {
  sizeBars();
  const player = new Player();
  document.getElementById("sched-play").addEventListener("click", () => player.play());
  document.getElementById("sched-step").addEventListener("click", () => player.step());
  document.getElementById("sched-all").addEventListener("click", () => player.showAll());
  const view = document.querySelector('[data-testid="sched-matrix-view"]');
  if (view?.dataset.live === "true") player.play();
  else player.showAll();
}
if (section?.dataset.pending === "true") follow();
