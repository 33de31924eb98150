//! Actions the operator never performs, even when the diff asks for them.

use crate::diff::{ComponentAction, Diff, DoguAction};
use crate::model::Flags;
use crate::problem::Problem;

pub(crate) fn check(diff: &Diff<'_>, flags: Flags, own_component: &str) -> Option<Problem> {
    let mut problems = Vec::new();
    for change in &diff.dogus {
        for action in &change.actions {
            let forbidden = match action {
                DoguAction::Downgrade => true,
                DoguAction::SwitchNamespace => !flags.allow_dogu_namespace_switch,
                _ => false,
            };
            if forbidden {
                problems.push(Problem::new(format!("{}: action \"{action}\" is not allowed", change.name())));
            }
        }
    }
    for change in &diff.components {
        for action in &change.actions {
            match action {
                ComponentAction::Downgrade | ComponentAction::SwitchNamespace => {
                    problems.push(Problem::new(format!("{}: action \"{action}\" is not allowed", change.name())))
                }
                ComponentAction::Uninstall if change.name() == own_component => problems.push(Problem::new(format!(
                    "{}: action \"{action}\" is not allowed: the operator cannot uninstall itself",
                    change.name()
                ))),
                _ => {}
            }
        }
    }
    Problem::join(problems)
}
