//! Diagnostics for drill files: file, line, column, what was expected, and
//! the source text around it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceSpan};

use super::located::Position;

/// A source file as read, shared by every diagnostic that points into it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as the user named it (or as resolved from a built-in name).
    pub path: PathBuf,
    pub text: Arc<str>,
}

impl SourceFile {
    pub fn new(path: impl Into<PathBuf>, text: impl Into<Arc<str>>) -> Self {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    /// The 1-based line and column of a byte offset, counting characters.
    fn line_column(&self, offset: usize) -> (u32, u32) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    }

    /// The byte offset of a 1-based line and column (clamped to the text).
    fn offset_of(&self, line: u32, column: u32) -> usize {
        let mut offset = 0;
        for _ in 1..line {
            match self.text[offset..].find('\n') {
                Some(i) => offset += i + 1,
                None => return self.text.len(),
            }
        }
        let rest = &self.text[offset..];
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let skip = rest[..line_end]
            .char_indices()
            .nth(column.saturating_sub(1) as usize)
            .map_or(line_end, |(i, _)| i);
        offset + skip
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// One problem in a drill file (or a file it refers to), with where it is.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based line (0 when the problem has no position, such as an unreadable file).
    pub line: u32,
    /// 1-based column (0 when unknown).
    pub column: u32,
    /// What is wrong and what was expected, in one sentence.
    pub message: String,
    /// A hint on how to fix it, when there is one.
    pub help: Option<String>,
    source: Option<Arc<str>>,
    offset: usize,
    len: usize,
}

impl Diagnostic {
    /// A problem at a position in a source file.
    pub fn at(source: &SourceFile, at: Position, message: impl Into<String>) -> Self {
        let (line, column, offset) = if at.is_known() {
            // Recompute the offset from line and column when the parser gave
            // no byte offset, so the snippet underlines the right place.
            let offset = if at.offset == 0 && (at.line > 1 || at.column > 1) {
                source.offset_of(at.line, at.column)
            } else {
                at.offset
            };
            (at.line, at.column, offset)
        } else {
            (1, 1, 0)
        };
        Diagnostic {
            file: source.path.clone(),
            line,
            column,
            message: message.into(),
            help: None,
            source: Some(source.text.clone()),
            offset: offset.min(source.text.len()),
            len: at.len,
        }
    }

    /// A problem at a byte offset of a source file.
    pub(crate) fn at_offset(
        source: &SourceFile,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = source.line_column(offset);
        let at = Position {
            line,
            column,
            offset,
            len: 0,
        };
        Self::at(source, at, message)
    }

    /// A problem with a whole file that has no text to point into.
    pub fn file(path: &Path, message: impl Into<String>) -> Self {
        Diagnostic {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
            source: None,
            offset: 0,
            len: 0,
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// `file:line:column`, or just `file` when there is no position.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.file.display().to_string()
        } else {
            format!("{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }

    /// Renders the diagnostic for a person: a `file:line:column: message`
    /// header a terminal or CI log can link, then the source around it.
    pub fn render(&self, color: bool) -> String {
        let mut out = format!("error: {}: {}\n", self.location(), self.message);
        if self.source.is_some() {
            let theme = if color {
                GraphicalTheme::unicode()
            } else {
                GraphicalTheme::unicode_nocolor()
            };
            let handler = GraphicalReportHandler::new_themed(theme)
                .with_width(100)
                .with_context_lines(2);
            let mut report = String::new();
            if handler.render_report(&mut report, &Snippet(self)).is_ok() {
                out.push_str(snippet_only(&report));
            }
        } else if let Some(help) = &self.help {
            out.push_str(&format!("  help: {help}\n"));
        }
        out
    }
}

/// A miette report without its own `× message` header, whose sentence the
/// `error:` line above already says: each error is printed once. The
/// snippet starts at the line that opens the source frame (`╭─[file]`).
fn snippet_only(report: &str) -> &str {
    let mut start = 0;
    for line in report.split_inclusive('\n') {
        if line.contains('╭') {
            return &report[start..];
        }
        start += line.len();
    }
    report
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// The miette view of a diagnostic, used only to draw the snippet.
struct Snippet<'a>(&'a Diagnostic);

impl fmt::Debug for Snippet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for Snippet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Snippet<'_> {}

impl miette::Diagnostic for Snippet<'_> {
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h.as_str()) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = SourceSpan::new(self.0.offset.into(), self.0.len);
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some("here".to_owned()),
            span,
        ))))
    }
}

impl miette::SourceCode for Snippet<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'b> + 'b>, miette::MietteError> {
        let text: &'b str = self.0.source.as_deref().unwrap_or("");
        let contents = text.read_span(span, context_lines_before, context_lines_after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.0.file.display().to_string(),
            contents.data(),
            *contents.span(),
            contents.line(),
            contents.column(),
            contents.line_count(),
        )))
    }
}

/// Everything wrong with a drill, in file order.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Renders every problem, sorted by file and position.
    pub fn render(&self, color: bool) -> String {
        let mut sorted: Vec<&Diagnostic> = self.0.iter().collect();
        sorted.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        let mut out = String::new();
        for d in sorted {
            out.push_str(&d.render(color));
        }
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
