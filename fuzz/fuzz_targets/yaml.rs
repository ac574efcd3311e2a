//! The YAML translator alone: the JSON it writes must parse, and every offset it maps back must
//! lie in the YAML text on a character boundary.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xdsck_core::load::{Limits, yaml};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(y) = yaml::translate(text, &Limits::default()) else { return };
    serde_json::from_str::<serde::de::IgnoredAny>(y.json()).expect("the translation is JSON");
    for json_offset in [0, y.json().len() / 2, y.json().len()] {
        let o = y.yaml_offset(json_offset);
        assert!(o <= text.len() && text.is_char_boundary(o), "offset {o} of {}", text.len());
    }
    if let Some(o) = y.pointer_offset("/0") {
        assert!(o <= text.len() && text.is_char_boundary(o));
    }
});
