//! Validation of a Blueprint: static (the blueprint alone), the effective blueprint (mask applied) and
//! dynamic (against dogu descriptors).

pub mod dynamic;
pub mod effective;
pub mod statics;

pub use dynamic::Validity;
pub use effective::EffectiveBlueprint;
