#!/usr/bin/env python3
"""Train the text sentiment sample: Embedding -> GlobalAveragePooling1D -> Dense -> softmax over 2.

usage: train_sentiment.py OUT_DIR        (run with the TensorFlow venv, .venv-tf)

The corpus is small and assembled here (CORPUS below, hand-written sentences,
each labelled positive or negative). Words are split as TFLite Model Maker's
text classifiers split them (lowercase, then at every run of characters that
are neither word characters nor an apostrophe), and vocab.txt has Model
Maker's "word id" form: <PAD> 0, <START> 1, <UNKNOWN> 2, then the words by
frequency (ties alphabetical). The model's input is int32 [1, SEQ_LEN]:
<START>, the word ids, <PAD>s. Training is seeded and single-threaded, so the
files come out the same on every run of the same TensorFlow build.

Writes OUT_DIR/sentiment.tflite (float32, with tflite-support metadata: labels,
regex tokenizer, vocabulary), sentiment.onnx (tf2onnx, labels in metadata_props),
sentiment.mlmodel (coremltools, NeuralNetwork classifier),
vocab.txt, labels.txt, sentences.txt (sample inputs), test/positive.txt and
test/negative.txt (held-out sentences, 25 each).
"""
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_DETERMINISTIC_OPS"] = "1"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
# Not `tflite_support.metadata_writers`: that package's __init__ imports the Task
# Library's protos, which need protobuf < 4 (TF 2.12 pins 4.25).
from tensorflow_lite_support.metadata.python.metadata_writers import metadata_info, nl_classifier  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_common import fixed_zip_times, start, tflite_to_onnx, write_mlmodel  # noqa: E402

SEQ_LEN = 16
EMBED = 16
EPOCHS = 60

POSITIVE = """
What a great day, I loved every minute of it
This is really fun and I feel great
The movie was wonderful and the actors were brilliant
I am so happy with this phone, it works perfectly
Today was amazing, we laughed all afternoon
The food was delicious and the staff were friendly
Best concert ever, the band was fantastic
I really enjoy reading this book, it is beautiful
Such a lovely surprise, thank you so much
The weather is sunny and warm, a perfect day
Great service, fast delivery, very pleased
I feel wonderful after the walk in the park
This game is so much fun, I can't stop playing
Excellent quality, I would buy it again
The kids had a great time at the zoo
What a nice place, the view is stunning
I love this song, it makes me smile
Our holiday was relaxing and fun
The new update is fantastic, everything is faster
She did a brilliant job, I am proud of her
The class was interesting and the teacher was great
It was a pleasant evening with good friends
Really good coffee and a cozy atmosphere
The team played well and we won, awesome
I am excited about the trip, it will be fun
This app is helpful and easy to use
A happy ending, I enjoyed the story
The garden looks beautiful in spring
Thanks for the kind words, it made my day
I feel great today, everything went well
Amazing performance, the crowd loved it
The hotel was clean, comfortable and quiet
I'm glad we came, this is a fun day
Superb dinner, I would recommend it to anyone
The puppy is adorable and so playful
Good news at last, I am really happy
The hike was fun and the views were great
Lovely people, wonderful food, great music
This is the best pizza in town
I had a really nice day at the beach
"""

NEGATIVE = """
What a terrible day, everything went wrong
This is really boring and I feel awful
The movie was dull and the actors were bad
I am so disappointed with this phone, it keeps crashing
Today was horrible, it rained all afternoon
The food was cold and the staff were rude
Worst concert ever, the sound was terrible
I hate reading this book, it is so boring
Such a nasty surprise, I am upset
The weather is cold and grey, a miserable day
Awful service, late delivery, very annoyed
I feel sick and tired after the long wait
This game is frustrating, I want a refund
Poor quality, it broke after one day
The kids were bored and cried all day
What an ugly place, the room was dirty
I can't stand this song, it is annoying
Our holiday was stressful and expensive
The new update is terrible, everything is slower
He did a sloppy job, I am angry
The class was boring and the teacher was late
It was an unpleasant evening, nobody talked
Really bad coffee and a noisy room
The team played badly and we lost again
I am worried about the trip, it will be a mess
This app is useless and hard to use
A sad ending, I did not enjoy the story
The garden looks dead and dry
Nobody answered my complaint, it ruined my day
I feel terrible today, nothing went well
Awful performance, the crowd left early
The hotel was dirty, noisy and uncomfortable
I regret coming, this is a wasted day
Disgusting dinner, I would not recommend it
The printer is broken and makes a horrible noise
Bad news again, I am really sad
The hike was painful and the path was muddy
Rude people, bland food, loud music
This is the worst pizza in town
I had a really bad day at work
"""

# Held out: never trained on. Written to test/positive.txt and test/negative.txt,
# the data `make demo-release` gates the compressed model on.
TEST_POSITIVE = """
The concert was great and the crowd was happy
I really love this coffee, it is delicious
What a wonderful book, I enjoyed every page
The staff were kind and the room was clean
We had a fun afternoon at the park
This phone is fast and easy to use
The food was good and the music was lovely
I am happy with the new update
A beautiful day at the beach with friends
The teacher was friendly and the class was fun
Great movie, the story was brilliant
Our trip was perfect, I would go again
The hotel staff were helpful and friendly
I feel so happy today, thank you
The pizza was amazing and the service was fast
This song is beautiful, I love it
The kids loved the game, it was great fun
Such a nice evening, we laughed a lot
The view from the room was wonderful
Fantastic team, they played really well
I enjoyed the walk, the weather was perfect
Good quality and fast delivery, thank you
The garden is lovely and quiet
What a great performance, I loved it
This is a really nice place to relax
"""

TEST_NEGATIVE = """
The concert was terrible and the sound was awful
I really hate this coffee, it is bitter
What a boring book, I did not finish it
The staff were rude and the room was dirty
We had a horrible afternoon in the rain
This phone is slow and hard to use
The food was cold and the music was too loud
I am angry about the new update
A miserable day at work, everything went wrong
The teacher was late and the class was boring
Bad movie, the story was dull
Our trip was a mess, I would not go again
The hotel was noisy and the bed was uncomfortable
I feel so sad today, nothing went well
The pizza was awful and the service was slow
This song is annoying, I can't stand it
The kids were bored, the game was terrible
Such an unpleasant evening, nobody laughed
The view from the room was ugly
Awful team, they played really badly
I hated the walk, the weather was cold and grey
Poor quality and late delivery, very disappointed
The garden is dead and dirty
What a bad performance, the crowd left
This is a really awful place, I regret coming
"""

SAMPLES = [
    "Today is a really fun day! I feel great! :)",
    "The service was slow and the food was cold.",
    "I loved the concert, the band was brilliant.",
    "This is the worst movie I have ever seen.",
]



def lines(text):
    """The non-blank lines of one of the sentence lists above."""
    return [l.strip() for l in text.strip().splitlines() if l.strip()]


def words(sentence):
    """Model Maker's split: lowercase, split at runs of [^\\w'], empty pieces dropped."""
    return [w for w in re.split(r"[^\w']+", sentence.lower().strip()) if w]


def vocabulary(sentences):
    counts = {}
    for s in sentences:
        for w in words(s):
            counts[w] = counts.get(w, 0) + 1
    ordered = sorted(counts, key=lambda w: (-counts[w], w))
    vocab = {"<PAD>": 0, "<START>": 1, "<UNKNOWN>": 2}
    for w in ordered:
        vocab[w] = len(vocab)
    return vocab


def encode(sentence, vocab):
    ids = [vocab["<START>"]] + [vocab.get(w, vocab["<UNKNOWN>"]) for w in words(sentence)]
    ids = ids[:SEQ_LEN]
    return ids + [vocab["<PAD>"]] * (SEQ_LEN - len(ids))


def build_model(vocab_size):
    """Word ids → embedding average → softmax (Samples/train/keras_sources.py builds it too)."""
    inp = tf.keras.Input(shape=(SEQ_LEN,), dtype=tf.int32, batch_size=1, name="input_ids")
    h = tf.keras.layers.Embedding(vocab_size, EMBED, name="embedding")(inp)
    h = tf.keras.layers.GlobalAveragePooling1D(name="average")(h)
    y = tf.keras.layers.Dense(2, activation="softmax", name="sentiment")(h)
    return tf.keras.Model(inp, y, name="sentiment")


def main():
    out = start(__doc__, 7)

    pos, neg = lines(POSITIVE), lines(NEGATIVE)
    sentences = pos + neg
    labels = np.array([1] * len(pos) + [0] * len(neg), dtype=np.int32)
    vocab = vocabulary(sentences)
    x = np.array([encode(s, vocab) for s in sentences], dtype=np.int32)

    model = build_model(len(vocab))
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, labels, epochs=EPOCHS, batch_size=8, shuffle=True, verbose=0)
    _, acc = model.evaluate(x, labels, batch_size=8, verbose=0)
    print(f"sentiment: {len(sentences)} sentences, vocabulary {len(vocab)}, training accuracy {acc:.3f}")

    test_pos, test_neg = lines(TEST_POSITIVE), lines(TEST_NEGATIVE)
    x_test = np.array([encode(s, vocab) for s in test_pos + test_neg], dtype=np.int32)
    y_test = np.array([1] * len(test_pos) + [0] * len(test_neg), dtype=np.int32)
    _, test_acc = model.evaluate(x_test, y_test, batch_size=8, verbose=0)
    print(f"sentiment: {len(x_test)} held-out sentences, test accuracy {test_acc:.3f}")

    for s in SAMPLES:
        p = model.predict(np.array([encode(s, vocab)], dtype=np.int32), verbose=0)[0]
        print(f"  {'positive' if p[1] > p[0] else 'negative'} {p[1]:.3f}  {s}")

    model.save(os.path.join(out, "sentiment.h5"))  # the Keras source (Keras 2 HDF5)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.writelines(f"{w} {i}\n" for w, i in vocab.items())
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.write("negative\npositive\n")
    # The .tflite carries labels and tokenizer (Model Maker's regex and vocabulary) as
    # tflite-support metadata, as Model Maker's text classifiers do.
    plain = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    writer = nl_classifier.MetadataWriter.create_for_inference(
        bytearray(plain), metadata_info.RegexTokenizerMd(r"[^\w\']+", os.path.join(out, "vocab.txt")),
        [os.path.join(out, "labels.txt")])
    with open(os.path.join(out, "sentiment.tflite"), "wb") as f:
        f.write(fixed_zip_times(writer.populate()))
    tflite_to_onnx(os.path.join(out, "sentiment.tflite"), os.path.join(out, "sentiment.onnx"), ["negative", "positive"],
                   "Sentiment of an English sentence; input: Model Maker word ids (vocab.txt)")
    with open(os.path.join(out, "sentences.txt"), "w") as f:
        f.writelines(s + "\n" for s in SAMPLES)
    os.makedirs(os.path.join(out, "test"), exist_ok=True)
    for name, held_out in (("positive", test_pos), ("negative", test_neg)):
        with open(os.path.join(out, "test", f"{name}.txt"), "w") as f:
            f.writelines(s + "\n" for s in held_out)
    write_mlmodel(os.path.join(out, "sentiment.mlmodel"),
                  "Sentiment of an English sentence (negative, positive); input: Model Maker word ids", lambda ct: ct.convert(
                      model, convert_to="neuralnetwork", inputs=[ct.TensorType(shape=(1, SEQ_LEN), name="input_ids")],
                      classifier_config=ct.ClassifierConfig(["negative", "positive"])))


if __name__ == "__main__":
    main()
