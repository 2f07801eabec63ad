//! LearnedFTL (HPCA'24, SPEC §5.5).

pub mod model;
pub mod plr;
