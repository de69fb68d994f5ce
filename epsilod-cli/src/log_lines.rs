//! How the libraries' log events print on stderr: a warning or an error as
//! the command line's own lines (`warning: ...`, `error: ...`, as
//! docs/cli.md promises), diagnostics asked for with `RUST_LOG` or the
//! `EPSILOD_*_LOG` variables with their level and source.

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The event formatter of the CLI's subscriber.
pub struct LogLines;

impl<S, N> FormatEvent<S, N> for LogLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        match *meta.level() {
            Level::WARN => write!(writer, "warning: ")?,
            Level::ERROR => write!(writer, "error: ")?,
            level => write!(writer, "{level} {}: ", meta.target())?,
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
