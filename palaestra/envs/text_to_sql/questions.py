"""Questions about the shop database, each with its gold query, made from templates and a seed.

Every template draws its parameters from the rows of the task's database, so each question has
a non-empty answer there. Gold queries that order rows break every tie, so the expected order
is unique.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from palaestra import JsonDict, task_row
from palaestra.envs.text_to_sql.database import DEPARTMENTS, TIERS, shop_data

SYSTEM_PROMPT = (
    "You answer questions about a SQLite database. Use list_tables and describe_table to learn "
    "the schema and run_query to run SQL SELECT queries. Your answer is the last query you "
    "run successfully: its result must be exactly what was asked, with only the columns "
    "asked for. Then reply with the answer in one sentence."
)
TASKS_PER_DATABASE = 25
"""Generated tasks share a database in groups of this size (cheaper sessions)."""

Question = tuple[str, str]
Template = Callable[[random.Random, dict[str, list[tuple[object, ...]]]], Question]


def _q(text: object) -> str:
    """A string as an SQL literal."""
    return "'" + str(text).replace("'", "''") + "'"


def customers_in_city(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    city = rng.choice(t["customers"])[3]
    return (
        f"How many customers are based in {city}?",
        f"SELECT COUNT(*) FROM customers WHERE city = {_q(city)}",
    )


def pricey_in_category(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    category = rng.choice(sorted({str(p[2]) for p in t["products"]}))
    prices = sorted(float(p[3]) for p in t["products"] if p[2] == category)  # type: ignore[arg-type]
    floor = prices[len(prices) // 2 - 1] if len(prices) > 1 else 0.0
    return (
        f"List the names of the {category} products that cost more than {floor:.2f} euros.",
        f"SELECT name FROM products WHERE category = {_q(category)} AND price > {floor:.2f}",
    )


def most_expensive(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    k = rng.randrange(2, 6)
    return (
        f"What are the {k} most expensive products? Give each name and price, most "
        "expensive first.",
        f"SELECT name, price FROM products ORDER BY price DESC, name LIMIT {k}",
    )


def orders_of_customer(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    buyers = {o[1] for o in t["orders"]}
    name = rng.choice([c[1] for c in t["customers"] if c[0] in buyers])
    return (
        f"How many orders has {name} placed?",
        "SELECT COUNT(*) FROM orders JOIN customers ON customers.id = orders.customer_id "
        f"WHERE customers.name = {_q(name)}",
    )


def value_by_status(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    status = rng.choice(sorted({str(o[3]) for o in t["orders"]}))
    return (
        f"What is the total value (quantity times unit price) of all {status} orders?",
        "SELECT SUM(order_items.quantity * order_items.unit_price) FROM order_items "
        f"JOIN orders ON orders.id = order_items.order_id WHERE orders.status = {_q(status)}",
    )


def products_per_category(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    return (
        "How many products are there in each category? Give the category and the count.",
        "SELECT category, COUNT(*) FROM products GROUP BY category",
    )


def never_ordered(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    return (
        "Which customers have never placed an order? Give their names.",
        "SELECT name FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)",
    )


def department_salary(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    department = rng.choice(DEPARTMENTS)
    return (
        f"What is the average salary in the {department} department?",
        f"SELECT AVG(salary) FROM employees WHERE department = {_q(department)}",
    )


def best_customer(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    return (
        "Which customer has spent the most on delivered orders (quantity times unit price)? "
        "Give the name.",
        "SELECT customers.name FROM customers JOIN orders ON orders.customer_id = customers.id "
        "JOIN order_items ON order_items.order_id = orders.id WHERE orders.status = 'delivered' "
        "GROUP BY customers.id ORDER BY SUM(order_items.quantity * order_items.unit_price) DESC, "
        "customers.name LIMIT 1",
    )


def out_of_stock(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    return (
        "List the names of the products that are out of stock.",
        "SELECT name FROM products WHERE stock = 0",
    )


def orders_in_month(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    month = str(rng.choice(t["orders"])[2])[:7]
    return (
        f"How many orders were placed in the month {month} (year-month)?",
        f"SELECT COUNT(*) FROM orders WHERE order_date LIKE {_q(month + '-%')}",
    )


def reports_of(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    head = rng.choice([e for e in t["employees"] if e[5] is None])[1]
    return (
        f"List the names of the employees who report to {head}.",
        "SELECT e.name FROM employees AS e JOIN employees AS m ON e.manager_id = m.id "
        f"WHERE m.name = {_q(head)}",
    )


def tier_by_country(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    tier = rng.choice(TIERS)
    return (
        f"How many {tier} customers are there in each country? Give the country and the count.",
        f"SELECT country, COUNT(*) FROM customers WHERE tier = {_q(tier)} GROUP BY country",
    )


def hired_after(rng: random.Random, t: dict[str, list[tuple[object, ...]]]) -> Question:
    dates = sorted(str(e[4]) for e in t["employees"])
    since = dates[rng.randrange(len(dates) // 2, len(dates) - 2)]
    return (
        f"Which employees were hired after {since}? Give each name and hire date, earliest first.",
        f"SELECT name, hire_date FROM employees WHERE hire_date > {_q(since)} "
        "ORDER BY hire_date, name",
    )


TEMPLATES: dict[str, Template] = {
    f.__name__: f
    for f in (
        customers_in_city,
        pricey_in_category,
        most_expensive,
        orders_of_customer,
        value_by_status,
        products_per_category,
        never_ordered,
        department_salary,
        best_customer,
        out_of_stock,
        orders_in_month,
        reports_of,
        tier_by_country,
        hired_after,
    )
}


def make_task(database_seed: int, template: str, rng: random.Random) -> JsonDict:
    question, gold = TEMPLATES[template](rng, shop_data(database_seed).tables)
    return task_row(
        question,
        system=SYSTEM_PROMPT,
        database_seed=database_seed,
        template=template,
        question=question,
        gold_sql=gold,
    )


def generate(count: int, seed: int) -> Iterator[JsonDict]:
    """``count`` tasks, every template in turn, over databases drawn from ``seed``."""
    rng = random.Random(seed)
    names = sorted(TEMPLATES)
    rng.shuffle(names)
    database_seed = 0
    for index in range(count):
        if index % TASKS_PER_DATABASE == 0:
            database_seed = rng.randrange(2**31)
        yield make_task(database_seed, names[index % len(names)], rng)
