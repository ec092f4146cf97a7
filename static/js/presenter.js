// Classroom display: presenter mode (large type, high contrast), dark and
// light themes, both remembered, and the keyboard: space or → shows the next
// step, ← the previous one (the map's steps on the home page, the rows of an
// object's timeline), P toggles presenter mode.

const THEME_KEY = "glassplane.theme";
const PRESENTER_KEY = "glassplane.presenter";

function remembered(key, fallback) {
  try {
    return localStorage.getItem(key) ?? fallback;
  } catch {
    return fallback;
  }
}

function remember(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Not remembered, still applied.
  }
}

function apply() {
  const root = document.documentElement;
  root.dataset.theme = remembered(THEME_KEY, "light") === "dark" ? "dark" : "light";
  root.classList.toggle("presenter", remembered(PRESENTER_KEY, "off") === "on");
  document.getElementById("presenter-toggle")?.setAttribute("aria-pressed", String(root.classList.contains("presenter")));
  document.getElementById("theme-toggle")?.setAttribute("aria-pressed", String(root.dataset.theme === "dark"));
}

function togglePresenter() {
  remember(PRESENTER_KEY, document.documentElement.classList.contains("presenter") ? "off" : "on");
  apply();
}

// navigate asks the page to move through its steps by dir (+1 or -1).
function navigate(dir) {
  document.dispatchEvent(new CustomEvent("glassplane:navigate", { detail: { dir } }));
}

export function presenter() {
  apply();
  document.getElementById("presenter-toggle")?.addEventListener("click", togglePresenter);
  document.getElementById("theme-toggle")?.addEventListener("click", () => {
    remember(THEME_KEY, document.documentElement.dataset.theme === "dark" ? "light" : "dark");
    apply();
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest?.("input, textarea, select, button, [contenteditable]")) return;
    if (ev.key === " " || ev.key === "ArrowRight") {
      ev.preventDefault();
      navigate(1);
    } else if (ev.key === "ArrowLeft") {
      ev.preventDefault();
      navigate(-1);
    } else if (ev.key === "p" || ev.key === "P") {
      togglePresenter();
    }
  });
}

// timelineKeys moves a highlight through an object's timeline rows.
export function timelineKeys() {
  let cursor = -1;
  document.addEventListener("glassplane:navigate", (ev) => {
    const rows = [...document.querySelectorAll('[data-testid="timeline-row"]')];
    if (!rows.length) return;
    cursor = Math.max(0, Math.min(rows.length - 1, cursor + ev.detail.dir));
    rows.forEach((r, i) => r.classList.toggle("current", i === cursor));
    rows[cursor].scrollIntoView({ block: "nearest" });
  });
}
