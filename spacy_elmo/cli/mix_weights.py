"""`python -m spacy_elmo mix-weights PIPELINE_DIR`: what each task learned to mix.

The reading and drawing live in `spacy_elmo.layer_mixes`.
"""

from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from .. import layer_mixes
from ..errors import ElmoError
from .app import app


@app.command("mix-weights")
def mix_weights_cli(
    pipeline_dir: Path = typer.Argument(..., help="A trained pipeline directory", exists=True, file_okay=False),
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        help="Also draw the weights into this chart (.png, .svg or .pdf); none without it",
    ),
) -> None:
    """Print every listener's learned layer weights softmax(s) and scale γ, one
    table per biLM they mix; with --output, also plot them."""
    try:
        if output is not None:
            layer_mixes.check_chart_path(output)
        nlp = layer_mixes.load_pipeline(pipeline_dir)
    except ElmoError as err:
        msg.fail("Cannot show the layer weights", str(err), exits=1)
    mixes = layer_mixes.listener_mixes(nlp)
    if not mixes:
        msg.fail(
            f"No ELMo layer mix found in {pipeline_dir}: none of {nlp.pipe_names} listens to an elmo component.",
            exits=1,
        )
    for upstream, group in layer_mixes.by_upstream(mixes).items():
        weighed = {name: mix for name, mix in group.items() if mix["weights"] is not None}
        n_layers = layer_mixes.n_layers_of(weighed)
        what = f"'{upstream}'" if upstream != layer_mixes.OWN_BILM else "their own biLM"
        msg.divider(f"Mixing {what} ({n_layers} layers)" if weighed else f"Mixing {what}")
        if weighed:
            rows: List[list] = [
                [name, *(f"{w:.3f}" for w in mix["weights"]), f"{mix['gamma']:.3f}"] for name, mix in weighed.items()
            ]
            msg.table(rows, header=["component", *layer_mixes.layer_names(n_layers), "gamma"], divider=True)
        for name, mix in group.items():
            if mix["weights"] is None:
                msg.info(
                    f"{name}: its mix '{mix['layer']}' has no softmax layer weights to show "
                    "(only spacy-elmo.ScalarMix.v1 learns them)"
                )
    if output is not None and all(mix["weights"] is None for mix in mixes.values()):
        msg.warn(f"No chart written to {output}: none of the mixes has layer weights to draw.")
    elif output is not None:
        try:
            layer_mixes.plot_mixes(mixes, output)
        except ElmoError as err:
            msg.fail("Cannot save the chart", str(err), exits=1)
        msg.good(f"Saved the chart to {output}")
