//! Config keys the operator cannot read back are refused (docs/differences.md D40): the machine's part.
//! The reader's part and the scenario end to end are in the operator's tests.

use blueprint_machine::config_format::MAX_KEY_PARTS;
use blueprint_machine::fixtures::*;
use blueprint_machine::{Requeue, State};

fn key(parts: usize) -> String {
    (0..parts).map(|i| format!("k{i}")).collect::<Vec<_>>().join("/")
}

#[test]
fn a_key_with_more_parts_than_the_operator_reads_back_is_refused_by_static_validation() {
    let spec = |parts: usize| {
        format!(
            "{{displayName: x, blueprint: {{dogus: [{{name: official/cas, version: 7.1.5-2}}],
              config: {{dogus: {{cas: [{{key: {}, value: v}}]}}, global: [{{key: {}, value: v}}]}}}}}}",
            key(parts),
            key(parts + 1)
        )
    };
    let decision = Scenario::new(&spec(MAX_KEY_PARTS + 6)).decide();
    assert_eq!(decision.state, State::Invalid);
    assert_eq!(cond(&decision, "Valid"), pair("False", "Invalid"));
    let text = message(&decision, "Valid");
    assert!(text.contains(&format!("has {} parts", MAX_KEY_PARTS + 6)), "{text}");
    assert!(text.contains(&format!("has {} parts", MAX_KEY_PARTS + 7)), "the global key too: {text}");
    assert!(text.contains(&format!("at most {MAX_KEY_PARTS}")), "{text}");
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    assert!(decision.actions.is_empty(), "nothing is written");

    // The longest key allowed passes validation (a global key of one part more would not).
    let at_limit = format!(
        "{{displayName: x, blueprint: {{dogus: [{{name: official/cas, version: 7.1.5-2}}],
          config: {{dogus: {{cas: [{{key: {}, value: v}}]}}}}}}}}",
        key(MAX_KEY_PARTS)
    );
    let decision = Scenario::new(&at_limit).decide();
    assert_ne!(cond(&decision, "Valid").0, "False", "{}", message(&decision, "Valid"));
}

#[test]
fn removing_a_deep_key_is_not_refused() {
    // Keys only removed are not written: a deep key written before keys were limited can be removed.
    let spec = format!(
        "{{displayName: x, blueprint: {{dogus: [{{name: official/cas, version: 7.1.5-2}}],
          config: {{dogus: {{cas: [{{key: {}, absent: true}}]}}}}}}}}",
        key(MAX_KEY_PARTS + 6)
    );
    let decision = Scenario::new(&spec).decide();
    assert_ne!(cond(&decision, "Valid").0, "False", "{}", message(&decision, "Valid"));
}
