"""Runtime models: Ernest/Bell scale-out curves and CoBell's interference model (pure code).

    from cobell_cli.core.model import fit_runtime_model
    m = fit_runtime_model(runs)          # mappings/objects with scale_out, runtime_s, overlaps
    m.predict([8, 12], overlaps={"wordcount": 0.5})
"""

from cobell_cli.core.model.baselines import BellModel, ErnestModel, fit_bell, fit_ernest
from cobell_cli.core.model.select import RuntimeModel, fit_runtime_model

__all__ = ["BellModel", "ErnestModel", "RuntimeModel", "fit_bell", "fit_ernest",
           "fit_runtime_model"]
