"""The shop database: a schema of five tables filled with rows made from a seed.

``shop_data(seed)`` is the rows as Python tuples (the task generator reads them to ask
questions that have answers); ``database_image(seed)`` is the same database as a serialized
SQLite image, built once per seed and copied into each session's in-memory database.
"""

from __future__ import annotations

import datetime
import functools
import random
import sqlite3
from dataclasses import dataclass

SCHEMA: dict[str, tuple[tuple[str, str, str], ...]] = {
    "customers": (
        ("id", "INTEGER", "primary key"),
        ("name", "TEXT", "full name, unique"),
        ("email", "TEXT", ""),
        ("city", "TEXT", ""),
        ("country", "TEXT", ""),
        ("signup_date", "TEXT", "YYYY-MM-DD"),
        ("tier", "TEXT", "'basic', 'plus' or 'premium'"),
    ),
    "products": (
        ("id", "INTEGER", "primary key"),
        ("name", "TEXT", "unique"),
        ("category", "TEXT", ""),
        ("price", "REAL", "unit price in euros"),
        ("stock", "INTEGER", "units in the warehouse"),
    ),
    "orders": (
        ("id", "INTEGER", "primary key"),
        ("customer_id", "INTEGER", "references customers(id)"),
        ("order_date", "TEXT", "YYYY-MM-DD"),
        ("status", "TEXT", "'pending', 'shipped', 'delivered' or 'cancelled'"),
    ),
    "order_items": (
        ("order_id", "INTEGER", "references orders(id)"),
        ("product_id", "INTEGER", "references products(id)"),
        ("quantity", "INTEGER", ""),
        ("unit_price", "REAL", "price paid per unit"),
    ),
    "employees": (
        ("id", "INTEGER", "primary key"),
        ("name", "TEXT", "full name, unique"),
        ("department", "TEXT", ""),
        ("salary", "INTEGER", "yearly, in euros"),
        ("hire_date", "TEXT", "YYYY-MM-DD"),
        ("manager_id", "INTEGER", "references employees(id); NULL for department heads"),
    ),
}
"""Table -> (column, SQL type, note). The order of the tables is the order they are created."""


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST = _words(
    "Ada Alan Amir Ana Ben Carla Chen Dana Eli Emma Finn Grace Hana Ivan Jonas Kai Lara Leo "
    "Maya Mei Nadia Noah Omar Paula Priya Rosa Sam Sara Tariq Uma Vera Yusuf Zoe"
)
LAST = _words(
    "Abbott Bauer Costa Diaz Eriksen Fischer Garcia Haddad Ito Jensen Kowalski Lindqvist "
    "Moreau Novak Okafor Petrov Quinn Rossi Silva Tanaka Varga Weber Yilmaz Zhang"
)
CITIES = (
    ("Lisbon", "Portugal"),
    ("Porto", "Portugal"),
    ("Madrid", "Spain"),
    ("Valencia", "Spain"),
    ("Lyon", "France"),
    ("Paris", "France"),
    ("Berlin", "Germany"),
    ("Hamburg", "Germany"),
    ("Milan", "Italy"),
    ("Turin", "Italy"),
)
CATEGORIES = {
    "kitchen": ("kettle", "pan", "knife set", "blender", "toaster", "teapot"),
    "garden": ("hose", "rake", "planter", "lantern", "shears", "bench"),
    "office": ("desk lamp", "stapler", "notebook", "monitor stand", "chair mat", "organizer"),
    "outdoor": ("tent", "backpack", "sleeping bag", "compass", "water bottle", "stove"),
    "toys": ("puzzle", "kite", "robot kit", "board game", "yo-yo", "train set"),
}
ADJECTIVES = ("Classic", "Compact", "Deluxe", "Eco", "Nordic", "Pro", "Rustic", "Smart")
DEPARTMENTS = ("Sales", "Engineering", "Support", "Finance", "Marketing")
STATUSES = ("pending", "shipped", "delivered", "cancelled")
TIERS = ("basic", "plus", "premium")
EPOCH = datetime.date(2023, 1, 1)


@dataclass(frozen=True, slots=True)
class ShopData:
    """Every table's rows, in column order."""

    tables: dict[str, list[tuple[object, ...]]]


def _day(rng: random.Random, span: int) -> str:
    return (EPOCH + datetime.timedelta(days=rng.randrange(span))).isoformat()


def _unique_names(rng: random.Random, count: int) -> list[str]:
    names = [f"{first} {last}" for first in FIRST for last in LAST]
    return rng.sample(names, count)


@functools.lru_cache(maxsize=32)
def shop_data(seed: int) -> ShopData:
    """The rows of the database made from ``seed`` (same seed, same rows)."""
    rng = random.Random(seed)
    people = _unique_names(rng, 90)
    customers = []
    for index, name in enumerate(people[:60], start=1):
        city, country = rng.choice(CITIES)
        email = name.lower().replace(" ", ".") + "@example.com"
        customers.append((index, name, email, city, country, _day(rng, 540), rng.choice(TIERS)))
    products = []
    titles = sorted({f"{a} {n}" for a in ADJECTIVES for ns in CATEGORIES.values() for n in ns})
    chosen = rng.sample(titles, 40)
    prices = rng.sample(range(299, 49_999), 40)  # distinct prices, in cents
    for index, title in enumerate(sorted(chosen), start=1):
        category = next(c for c, nouns in CATEGORIES.items() if title.split(" ", 1)[1] in nouns)
        stock = 0 if rng.random() < 0.15 else rng.randrange(1, 250)
        products.append((index, title, category, prices[index - 1] / 100, stock))
    orders, items = [], []
    buyers = [c[0] for c in customers[:50]]  # the last ten customers never order
    for index in range(1, 201):
        orders.append((index, rng.choice(buyers), _day(rng, 730), rng.choice(STATUSES)))
        for product in rng.sample(products, rng.randrange(1, 5)):
            discount = rng.choice((1.0, 1.0, 1.0, 0.9))
            unit_price = round(float(product[3]) * discount, 2)
            items.append((index, product[0], rng.randrange(1, 6), unit_price))
    employees: list[tuple[object, ...]] = []
    hire_days = rng.sample(range(3650), 30)  # distinct hire dates
    heads: dict[str, int] = {}
    for index, name in enumerate(people[60:], start=1):
        department = DEPARTMENTS[(index - 1) % len(DEPARTMENTS)]
        manager = heads.setdefault(department, index)
        hired = (EPOCH - datetime.timedelta(days=hire_days[index - 1])).isoformat()
        salary = rng.randrange(32, 140) * 1000
        employees.append(
            (index, name, department, salary, hired, None if manager == index else manager)
        )
    tables = {
        "customers": customers,
        "products": products,
        "orders": orders,
        "order_items": items,
        "employees": employees,
    }
    return ShopData(tables)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=32)
def database_image(seed: int) -> bytes:
    """The database made from ``seed`` as a serialized SQLite image."""
    connection = sqlite3.connect(":memory:")
    try:
        for table, columns in SCHEMA.items():
            definitions = ", ".join(
                f"{name} {kind}{' PRIMARY KEY' if note == 'primary key' else ''}"
                for name, kind, note in columns
            )
            connection.execute(f"CREATE TABLE {table} ({definitions})")
            marks = ", ".join("?" * len(columns))
            connection.executemany(
                f"INSERT INTO {table} VALUES ({marks})", shop_data(seed).tables[table]
            )
        connection.commit()
        return connection.serialize()
    finally:
        connection.close()
