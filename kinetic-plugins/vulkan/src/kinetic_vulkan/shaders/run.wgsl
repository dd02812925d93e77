// What every shader reads of the pass (plan.Workspace.set_inputs): its rows, and how many of them ask for logits.
struct Run { n: u32, n_logits: u32 }

