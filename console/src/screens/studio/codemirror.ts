// The code editor itself: CodeMirror 6 with JavaScript highlighting, loaded (its own chunk) only when the editor is
// shown. Tab is left to move the focus on, so the editor never traps the keyboard; Enter keeps the indentation.
//
// It lives in a shadow root: there CodeMirror adds its styles as constructed style sheets, which the console's
// Content-Security-Policy (no inline style) allows, where in the document it would add a <style> element, which the
// policy blocks. The colours are the console's own CSS variables (studio.css: light and dark, each at least WCAG AA
// on the code background), which reach into the shadow root.
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { javascriptLanguage } from "@codemirror/lang-javascript";
import { bracketMatching, HighlightStyle, indentOnInput, LanguageSupport, syntaxHighlighting } from "@codemirror/language";
import { EditorState } from "@codemirror/state";
import { drawSelection, EditorView, keymap, lineNumbers } from "@codemirror/view";
import { tags } from "@lezer/highlight";

export interface Mounted {
  destroy: () => void;
}

const look = EditorView.theme({
  "&": {
    color: "var(--text)",
    backgroundColor: "var(--code-bg)",
    border: "1px solid var(--border)",
    borderRadius: "var(--radius)",
    minHeight: "12rem",
    maxHeight: "32rem",
    fontSize: "0.88rem",
  },
  "&.cm-focused": { outline: "3px solid var(--focus)", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", lineHeight: "1.5" },
  ".cm-gutters": { backgroundColor: "var(--surface)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground": { backgroundColor: "var(--info-bg)" },
  "&.cm-focused .cm-matchingBracket": { backgroundColor: "var(--info-bg)", outline: "1px solid var(--border)" },
});

const colours = HighlightStyle.define([
  { tag: [tags.keyword, tags.bool, tags.atom, tags.null, tags.modifier], color: "var(--tok-keyword)" },
  { tag: [tags.string], color: "var(--tok-string)" },
  { tag: [tags.number], color: "var(--tok-number)" },
  { tag: [tags.comment], color: "var(--tok-comment)", fontStyle: "italic" },
  { tag: [tags.definition(tags.variableName), tags.function(tags.variableName), tags.className], color: "var(--tok-function)" },
  { tag: [tags.propertyName], color: "var(--tok-property)" },
  { tag: [tags.regexp, tags.escape, tags.special(tags.string)], color: "var(--tok-regexp)" },
  { tag: [tags.invalid], color: "var(--bad)" },
]);

// Typing over a selection is CodeMirror's change, not the browser's: Chromium's own deletes the selected lines and
// wraps the typed text in an inline style (the colours of the tokens it replaced), which the console's CSP refuses.
const typedOverSelection = EditorView.domEventHandlers({
  beforeinput(event, view) {
    if (event.inputType !== "insertText" || !event.data || view.state.selection.ranges.every((range) => range.empty)) {
      return false;
    }
    event.preventDefault();
    view.dispatch(view.state.replaceSelection(event.data), { scrollIntoView: true, userEvent: "input.type" });
    return true;
  },
});

export function mount(host: HTMLElement, code: string, label: string, onChange: (code: string) => void): Mounted {
  const root = host.shadowRoot ?? host.attachShadow({ mode: "open" });
  const view = new EditorView({
    root,
    parent: root,
    state: EditorState.create({
      doc: code,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        new LanguageSupport(javascriptLanguage), // the grammar alone: no completion sources, which nothing here uses
        syntaxHighlighting(colours),
        look,
        keymap.of([...defaultKeymap, ...historyKeymap]),
        typedOverSelection,
        EditorView.lineWrapping,
        // Inside the shadow root an id outside cannot label it: the label is the content's own.
        EditorView.contentAttributes.of({ "aria-label": label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return { destroy: () => view.destroy() };
}
