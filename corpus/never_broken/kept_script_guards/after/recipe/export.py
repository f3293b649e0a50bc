"""Export a trained model for the C++ runtime (`--jit 1`), as the recipe's README says."""
import argparse
import logging

import torch

from recipe.train import get_params, get_transducer_model


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jit", type=int, default=1, help="1: export with torch.jit.script for the C++ runtime")
    parser.add_argument("--filename", type=str, default="cpu_jit.pt")
    return parser


@torch.no_grad()
def main(argv=None):
    args = get_parser().parse_args(argv)
    params = get_params()
    params.update(vars(args))
    torch.manual_seed(0)
    model = get_transducer_model(params)
    model.eval()
    if params.jit:
        logging.info("Using torch.jit.script")
        model = torch.jit.script(model)
        model.save(params.filename)
    return model


if __name__ == "__main__":
    main()
