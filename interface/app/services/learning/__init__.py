"""Memory that fills itself: learning what a repository already holds. One module per source (git.py: the
commit history, `strata learn`), all reporting in one summary (core.LearnReport) and recording through
core.learn_commits, which the git source and ops/eval_history.py share. The rules (what a commit
becomes) are domain/history.py; the recording commands are domain/learning_commands.py; docs/LEARNING.md says both."""
