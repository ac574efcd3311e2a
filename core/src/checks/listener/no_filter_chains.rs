//! `no-filter-chains`: a listener with neither `filter_chains` nor `default_filter_chain` that
//! Envoy rejects.

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Address, Casing, Protocol};

declare_rule! {
    pub(crate) static RULE for NoFilterChains = {
        code: "XDS106",
        name: "no-filter-chains",
        severity: Severity::Error,
        summary: "A listener has no filter_chains and no default_filter_chain; Envoy rejects it.",
        explanation: "no_filter_chains.md",
    }
}

pub(crate) struct NoFilterChains;

fn diagnostic(l: &ListenerCx<'_, '_>) -> Diagnostic {
    Diagnostic::new(&RULE, format!("listener '{}' has no filter chains", l.listener.display_name()))
        .at(l.location())
        .listener(l.listener.display_name().into_owned())
        .with_envoy_error(envoy_text::adding_listener(l.listener, "no filter chains specified"))
        .note("Envoy accepts a listener with only a default_filter_chain, but not one with no chain at all")
}

/// Whether Envoy requires a chain: everything but connection-less UDP and API listeners (checked
/// with envoy 1.40: TCP, pipe, internal and QUIC listeners are rejected, plain UDP is not).
fn needs_chain(l: &ListenerCx<'_, '_>) -> bool {
    let listener = l.listener;
    // Envoy refuses a listener without an address before it looks at its chains
    // (`missing-address`), so it never says "no filter chains specified" for one.
    if listener.api_listener || listener.lacks_address() {
        return false;
    }
    // The socket type follows the (first) address; Envoy requires all to be alike.
    let udp = matches!(&listener.address, Some(Address::Socket(s)) if s.protocol == Protocol::Udp);
    if !udp {
        return true;
    }
    // The model records only that udp_listener_config is present; whether it holds quic_options
    // is read from the text, which is cheap because it is done only for chainless UDP listeners.
    let config = crate::source::join_field(&listener.pointer, listener.casing, "udp_listener_config");
    let pointer = crate::source::join_field(&config, listener.casing, "quic_options");
    let other = crate::source::join_token(
        &config,
        if listener.casing == Casing::Snake { "quicOptions" } else { "quic_options" },
    );
    l.locate_in_listener(&pointer).is_some() || l.locate_in_listener(&other).is_some()
}

impl Check for NoFilterChains {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            if l.listener.filter_chains.is_empty() && l.listener.default_filter_chain.is_none() && needs_chain(&l) {
                out.push(diagnostic(&l));
            }
        }
    }
}
