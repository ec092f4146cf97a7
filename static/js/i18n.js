// The dashboard's own words in the chosen language: navigation, headings,
// panels and notes carry data-i18n="key" and are rendered in English;
// applyLang sets each one's text in the language narration.js remembers
// (English back from the text the page was rendered with). Texts are set
// as textContent, never parsed as HTML. The cluster's own names (kinds,
// components, keys) stay as Kubernetes writes them.
import { currentLang } from "./narration.js";

const KO = {
  "nav.overview": "개요",
  "nav.apply": "적용",
  "nav.requests": "요청",
  "nav.events": "이벤트",
  "nav.nodes": "노드",
  "nav.demos": "데모",
  "top.theme": "테마",
  "top.presenter": "발표 모드",
  "top.logout": "로그아웃",
  "overview.map": "클러스터 맵",
  "overview.nodes": "노드",
  "overview.unscheduled": "노드를 기다리는 pod",
  "overview.steps": "최근 단계",
  "narration.head": "방금 일어난 일",
  "tempo.head": "진행 속도",
  "tempo.as": "변경 사용자:",
  "tempo.mode.realtime": "실시간",
  "tempo.mode.slow": "느리게",
  "tempo.mode.step": "한 단계씩",
  "tempo.delay": "지연",
  "tempo.set": "설정",
  "tempo.next": "다음 단계",
  "tempo.last": "마지막:",
  "apply.head": "매니페스트 적용",
  "requests.head": "요청 파이프라인",
  "events.head": "이벤트",
  "nodes.head": "노드",
  "demos.head": "수업용 데모",
  "demos.runs": "실행 기록",
  "login.head": "대시보드 로그인",
  "object.timeline": "타임라인",
  "object.dependents": "하위 객체의 단계",
  "object.stored": "저장된 객체",
  "object.decision": "스케줄러의 결정",
  "etcd.history": "기록",
  "etcd.value": "값",
  "etcd.filter": "키 필터",
  "sched.kind": "스케줄링",
  "sched.attempts": "시도",
  "sched.one-feasible": "모든 필터를 통과한 노드가 하나뿐이라 점수를 매길 필요가 없습니다.",
  "sched.more-nodes": "스케줄러가 여러 노드를 비교하는 모습을 보려면 다음 옵션으로 Glassplane을 시작하세요:",
  "error.home": "클러스터 맵으로 돌아가기",
};

// t is key's text in lang, or fallback (the English) when it has none.
export function t(key, lang, fallback) {
  return (lang === "ko" && KO[key]) || fallback;
}

// applyLang renders every data-i18n element under root in lang.
export function applyLang(lang = currentLang(), root = document) {
  document.documentElement.dataset.lang = lang;
  for (const n of root.querySelectorAll("[data-i18n]")) {
    if (n.dataset.i18nEn === undefined) n.dataset.i18nEn = n.textContent.trim();
    const text = t(n.dataset.i18n, lang, n.dataset.i18nEn);
    if (n.textContent !== text) n.textContent = text;
    if (text === n.dataset.i18nEn) n.removeAttribute("lang");
    else n.lang = lang;
  }
}
