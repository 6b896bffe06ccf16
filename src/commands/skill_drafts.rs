//! `mnemo skills drafts | accept NAME | reject NAME`: the skills the agent wrote without a
//! check that passed wait here for the person's yes.

use std::io::Write;

use super::{CommandError, local_time};
use crate::host::Loaded;
use crate::memory::StoreError;
use crate::memory::skills::SkillOrigin;

fn no_draft(name: &str) -> CommandError {
    CommandError::Usage(format!(
        "there is no skill draft named `{name}` (`mnemo skills drafts` lists them)"
    ))
}

pub fn drafts(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let drafts = loaded.store()?.call_blocking(|db| db.skill_drafts())?;
    if drafts.is_empty() {
        writeln!(out, "No skill drafts wait for you.")?;
        return Ok(());
    }
    for draft in &drafts {
        writeln!(
            out,
            "{}  {}  → {}\n  {}\n  not saved because {}",
            draft.name,
            local_time(draft.created_at),
            draft.root.display(),
            draft.description,
            draft.why.lines().next().unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "\n`mnemo skills accept NAME` saves one as a skill; `mnemo skills reject NAME` drops it."
    )?;
    Ok(())
}

pub fn accept(loaded: &Loaded, name: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let store = loaded.store()?;
    let wanted = name.to_string();
    let draft = match store.call_blocking(move |db| db.take_skill_draft(&wanted)) {
        Err(StoreError::NotFound { .. }) => return Err(no_draft(name)),
        taken => taken?,
    };
    let mut metadata = serde_json::Map::new();
    if let Some(verify) = &draft.verify {
        metadata.insert("verify".into(), verify.clone().into());
    }
    metadata.insert("verified".into(), "accepted by the person".into());
    let written = crate::skills::write_skill(
        &draft.root,
        &draft.name,
        &draft.description,
        &draft.body,
        &metadata,
    );
    let dir = match written {
        Ok(dir) => dir,
        Err(err) => {
            // Nothing was saved: the draft stays for another try.
            store.call_blocking(move |db| db.hold_skill_draft(draft).map(|_| ()))?;
            return Err(err.into());
        }
    };
    let (skill, session) = (draft.name.clone(), draft.session.clone());
    store.call_blocking(move |db| {
        db.skill_written(&skill, SkillOrigin::Learned, Some(&session), None)
    })?;
    writeln!(out, "saved skill {name} to {}", dir.display())?;
    Ok(())
}

pub fn reject(loaded: &Loaded, name: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let wanted = name.to_string();
    match loaded
        .store()?
        .call_blocking(move |db| db.take_skill_draft(&wanted))
    {
        Err(StoreError::NotFound { .. }) => Err(no_draft(name)),
        taken => {
            taken?;
            writeln!(out, "dropped the skill draft {name}")?;
            Ok(())
        }
    }
}
