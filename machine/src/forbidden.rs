//! Actions the operator never performs, even when the diff asks for them.

use crate::diff::{ComponentAction, Diff, DoguAction};
use crate::model::Flags;
use crate::observation::OperatorFacts;
use crate::problem::Problem;
use crate::validation::EffectiveBlueprint;

pub(crate) fn check(
    diff: &Diff<'_>,
    effective: &EffectiveBlueprint<'_>,
    flags: Flags,
    operator: &OperatorFacts,
    own_component: &str,
) -> Option<Problem> {
    let mut problems: Vec<Problem> = replacement(effective, operator, own_component).into_iter().collect();
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

/// A blueprint that names the operator's own component at a version that is not one of this
/// operator's releases asks for another implementation (Cloudogu's Go operator shares the component
/// name). Applying it would replace this operator, and the self-upgrade would wait for a take-over
/// this operator cannot perform; so it is refused until allowed on purpose. Checked on the blueprint,
/// not the diff: a Component CR already at that version (left by the replaced operator) asks the same.
fn replacement(effective: &EffectiveBlueprint<'_>, operator: &OperatorFacts, own_component: &str) -> Option<Problem> {
    let own_versions = operator.own_versions.as_ref()?;
    if operator.allow_replacement {
        return None;
    }
    // Installed under a name of its own, this operator would get Cloudogu's beside it from a blueprint
    // that names Cloudogu's component: two operators applying one Blueprint.
    let upstream = crate::naming::OWN_COMPONENT.rsplit('/').next().unwrap_or_default();
    if own_component != upstream
        && let Some(other) = effective.components.iter().find(|c| c.name.simple == upstream && !c.absent)
    {
        return Some(Problem::new(format!(
            "{}: installing it would run another blueprint operator beside this one ({own_component}), and both \
             would apply this Blueprint. Remove the component from the blueprint; to hand over on purpose, start \
             the operator with ALLOW_OPERATOR_REPLACEMENT=true",
            other.name.simple
        )));
    }
    let own = effective.components.iter().find(|c| c.name.simple == own_component && !c.absent)?;
    let wanted = own.version.as_ref()?;
    if wanted.core_matches(own_versions) {
        return None;
    }
    Some(Problem::new(format!(
        "{own_component}: version {wanted} is not a release of this operator (its releases: {own_versions}); \
         applying it would replace this operator with another implementation. Name a version of this \
         operator or remove the component from the blueprint; to hand over on purpose, start the operator \
         with ALLOW_OPERATOR_REPLACEMENT=true"
    )))
}
