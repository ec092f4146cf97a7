// The dashboard's own words in the chosen language. Pages are rendered in
// English; an element with data-i18n="key" gets the Korean of ko.js in its
// place, and its English back (its own nodes, kept) when English is chosen.
// A translation may hold placeholders: {0}, {1}, … stand for the element's
// child elements in order (a <code>, a link: kept as they are, and
// translated themselves when they carry data-i18n), {name} for the
// element's data-name attribute (a count, a revision, a name). So a text
// with numbers or names in it is one sentence per language, never English
// and Korean glued together. data-i18n-title, data-i18n-placeholder and
// data-i18n-aria-label name the key of that attribute. Texts are set as
// text nodes, never parsed as HTML. The cluster's own words (kinds,
// resources, verbs, keys, API errors, Event reasons) stay as Kubernetes
// writes them.
import { currentLang, setLang, LANGS } from "./narration.js";
import { KO } from "./ko.js";

const ATTRS = ["title", "placeholder", "aria-label"];
const ATTR_SELECTOR = ATTRS.map((a) => `[data-i18n-${a}]`).join(",");

// originals keeps each translated element's English child nodes.
const originals = new WeakMap();
// korean holds the elements whose children are the Korean now.
const korean = new WeakSet();

// t is key's text in lang, or fallback (the English) when it has none.
export function t(key, lang, fallback) {
  return (lang === "ko" && KO[key]) || fallback;
}

// format fills a text's {name} placeholders from vars.
export function format(text, vars) {
  return text.replace(/\{(\w+)\}/g, (m, name) => (vars[name] === undefined ? m : String(vars[name])));
}

// nodesOf builds a translation's nodes: its text, the element's child
// elements for {0}, {1}, … and its data attributes for {name}.
function nodesOf(text, n, slots) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\{(\w+)\}/g)) {
    out.push(text.slice(last, m.index));
    const name = m[1];
    if (/^\d+$/.test(name)) out.push(slots[Number(name)] || "");
    else out.push(n.dataset[name] ?? "");
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out.filter((p) => p !== "");
}

function translate(n, lang) {
  if (!originals.has(n)) {
    originals.set(n, [...n.childNodes]);
    if (n.dataset.i18nEn === undefined) n.dataset.i18nEn = n.textContent.trim().replace(/\s+/g, " ");
  }
  const text = lang === "ko" ? KO[n.dataset.i18n] : undefined;
  if (text === undefined) {
    if (!korean.has(n)) return;
    n.replaceChildren(...originals.get(n));
    korean.delete(n);
    n.removeAttribute("lang");
    return;
  }
  if (korean.has(n)) return;
  const slots = originals.get(n).filter((c) => c.nodeType === Node.ELEMENT_NODE);
  n.replaceChildren(...nodesOf(text, n, slots));
  korean.add(n);
  n.setAttribute("lang", lang);
}

function translateAttrs(n, lang) {
  for (const a of ATTRS) {
    const key = n.getAttribute(`data-i18n-${a}`);
    if (!key) continue;
    const en = `data-i18n-en-${a}`;
    if (!n.hasAttribute(en)) n.setAttribute(en, n.getAttribute(a) || "");
    n.setAttribute(a, t(key, lang, n.getAttribute(en)));
  }
}

// applyLang renders every data-i18n element under root (root included) in lang.
export function applyLang(lang = currentLang(), root = document) {
  document.documentElement.dataset.lang = lang;
  document.documentElement.lang = lang;
  const self = root instanceof Element ? [root] : [];
  for (const n of [...self, ...root.querySelectorAll("[data-i18n]")]) if (n.dataset.i18n) translate(n, lang);
  for (const n of [...self, ...root.querySelectorAll(ATTR_SELECTOR)]) translateAttrs(n, lang);
}

// setText gives an element a new text the script chose (english, under
// key), shown in lang: for what a script updates, like the connection state.
export function setText(n, key, english, lang = currentLang()) {
  n.dataset.i18n = key;
  n.dataset.i18nEn = english;
  n.textContent = english;
  originals.set(n, [...n.childNodes]);
  korean.delete(n);
  translate(n, lang);
}

// chooseLang switches the page to lang, remembers it for every page and
// tells the page's scripts (the glassplane:lang event).
export function chooseLang(lang, remember = true) {
  if (!LANGS.includes(lang)) return;
  if (remember) setLang(lang);
  for (const b of document.querySelectorAll(".lang-btn")) b.setAttribute("aria-pressed", String(b.dataset.lang === lang));
  applyLang(lang);
  document.dispatchEvent(new CustomEvent("glassplane:lang", { detail: { lang } }));
}

// langButtons wires the top bar's language buttons; a choice made in
// another tab reaches this one too.
export function langButtons() {
  const lang = currentLang();
  for (const btn of document.querySelectorAll(".lang-btn")) {
    btn.setAttribute("aria-pressed", String(btn.dataset.lang === lang));
    btn.addEventListener("click", () => chooseLang(btn.dataset.lang));
  }
  window.addEventListener("storage", (ev) => {
    if (ev.key === "glassplane.lang") chooseLang(currentLang(), false);
  });
}
