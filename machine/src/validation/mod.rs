//! Validation of a Blueprint: static (the blueprint alone), the effective blueprint (mask applied) and
//! dynamic (against dogu descriptors).

pub(crate) mod dynamic;
pub(crate) mod effective;
pub(crate) mod statics;

pub(crate) use dynamic::Validity;
pub(crate) use effective::EffectiveBlueprint;
