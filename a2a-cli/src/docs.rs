//! `a2a completions SHELL` and `a2a man`: what shells and `man` need,
//! generated from the argument model itself, so they never lag behind it.

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::output::out;

/// Prints the completion script of `args.shell`.
pub(crate) fn completions(args: &CompletionsArgs) -> anyhow::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "a2a", &mut script);
    out!("{}", String::from_utf8(script)?)
}

/// Prints the `a2a(1)` page, or writes one page per command (`a2a.1`,
/// `a2a-serve.1`, ...) into `args.out_dir`.
pub(crate) fn man(args: &ManArgs) -> anyhow::Result<()> {
    let command = Cli::command();
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|err| anyhow::anyhow!("cannot create {}: {err}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .map_err(|err| anyhow::anyhow!("cannot write to {}: {err}", dir.display()))
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            out!("{}", String::from_utf8(page)?)
        }
    }
}
