//! What the client logs: `--raw` prints each JSON-RPC message from the target
//! `mcp_client::wire` on stdout (`->` sent, `<-` received); warnings and errors of the client go
//! to stderr, so that a dropped message or a misbehaving server is not silent.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};

struct Printer {
    raw: bool,
}

#[derive(Default)]
struct Fields {
    message: String,
    direction: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "direction" => self.direction = value.to_owned(),
            name => {
                let _ = write!(self.rest, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => {
                let _ = write!(self.rest, " {name}={value:?}");
            }
        }
    }
}

impl<S: Subscriber> Layer<S> for Printer {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        if metadata.target() == "mcp_client::wire" {
            return self.raw;
        }
        *metadata.level() <= Level::WARN
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if event.metadata().target() == "mcp_client::wire" {
            let arrow = if fields.direction == "send" { "->" } else { "<-" };
            anstream::println!("{arrow} {}", fields.message);
        } else {
            let level = event.metadata().level().as_str().to_ascii_lowercase();
            anstream::eprintln!("mcp: {level}: {}{}", fields.message, fields.rest);
        }
    }
}

pub fn install(raw: bool) {
    let subscriber = tracing_subscriber::registry().with(Printer { raw });
    let _ = tracing::subscriber::set_global_default(subscriber);
}
