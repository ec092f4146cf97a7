// The apply page's editor: the line an API error's field path points at is
// selected in the textarea (the first on load, any other on click), and the
// numbered copy of the manifest below marks every such line.

function lineRange(text, line) {
  let start = 0;
  for (let n = 1; n < line; n++) {
    const next = text.indexOf("\n", start);
    if (next < 0) return null;
    start = next + 1;
  }
  let end = text.indexOf("\n", start);
  if (end < 0) end = text.length;
  return [start, end];
}

function selectLine(editor, line) {
  const range = lineRange(editor.value, line);
  if (!range) return;
  editor.focus();
  editor.setSelectionRange(range[0], range[1]);
  const lineHeight = editor.scrollHeight / Math.max(1, editor.value.split("\n").length);
  editor.scrollTop = Math.max(0, (line - 3) * lineHeight);
  editor.dataset.selectedLine = String(line);
}

export function applyPage() {
  const editor = document.getElementById("manifest");
  if (!editor) return;
  const errors = [...document.querySelectorAll('[data-testid="field-error"]')].filter((e) => Number(e.dataset.line) > 0);
  for (const e of errors) {
    e.classList.add("clickable");
    e.addEventListener("click", () => selectLine(editor, Number(e.dataset.line)));
  }
  if (errors.length > 0) selectLine(editor, Number(errors[0].dataset.line));
}
