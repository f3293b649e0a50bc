from asrkit.model import ConvEncoder, Transducer


class AttributeDict(dict):
    def __getattr__(self, key):
        return self[key]

    def __setattr__(self, key, value):
        self[key] = value


def get_params() -> AttributeDict:
    return AttributeDict({"feature_dim": 10, "encoder_dim": 16, "vocab_size": 7})


def get_encoder_model(params: AttributeDict):
    return ConvEncoder(params.feature_dim, params.encoder_dim)


def get_transducer_model(params: AttributeDict):
    encoder = get_encoder_model(params)
    return Transducer(encoder=encoder, encoder_dim=params.encoder_dim, vocab_size=params.vocab_size)
